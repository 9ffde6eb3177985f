import assert from 'node:assert/strict';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { controllerClient, startTestApi, type TestApi } from '../support/api.js';
import type { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import type { KubeCluster } from '../support/kube.js';
import { isolatedNamespace } from '../support/services.js';
import {
  agentManifest,
  applyManifest,
  condition,
  controllerConfig,
  examplesDir,
  getResource,
  networkManifest,
  readyResource,
  resourceSatisfying,
  runController,
  startClusterWithCrds,
} from '../support/controller.js';
import type { RunningController } from '../../controllers/controller.js';

const FROM_KUBERNETES = { 'agentplane-managed-by': 'kubernetes' };
/** Where the platform runs: worker pools' Deployments go there, whatever the network's namespace. */
const PLATFORM_NAMESPACE = 'agentplane-system';

describe('the controller', function () {
  this.timeout(120_000);
  let api: TestApi;
  let client: ApiClient;
  let key: string;
  let cluster: KubeCluster;
  let controller: RunningController;

  const apply = (manifest: string) => applyManifest(cluster, manifest);

  before(async () => {
    api = await startTestApi({ namespace: await isolatedNamespace('controller') });
    client = await controllerClient(api);
    key = client.key!;
    cluster = await startClusterWithCrds('controller');
    assert.equal((await cluster.kubectl(['create', 'namespace', PLATFORM_NAMESPACE])).code, 0);
    const pools = {
      workerPoolNamespace: PLATFORM_NAMESPACE,
      workerEnvFrom: [
        { kind: 'configmap', name: 'agentplane-config' },
        { kind: 'secret', name: 'agentplane-env' },
      ],
    } as const;
    controller = await runController(cluster, controllerConfig(api.url, key, { ...pools, workerEnvFrom: [...pools.workerEnvFrom] }));
  });

  after(async () => {
    await controller?.stop();
    await cluster?.stop();
    await api?.stop();
  });

  it('makes the examples Ready, each with the id of the platform record it manages', async () => {
    const applied = await cluster.kubectl(['apply', '-n', 'default', '-f', examplesDir]);
    assert.equal(applied.code, 0, applied.stderr);
    const researcher = await readyResource(cluster, 'agents', 'researcher');
    const writer = await readyResource(cluster, 'agents', 'writer');
    const triage = await readyResource(cluster, 'agents', 'triage');
    const agent = await client.get(`/v1/agents/${researcher.status!.id}`);
    assert.equal(agent.status, 200);
    assert.equal(agent.body.name, 'researcher');
    assert.equal(agent.body.managed_by, 'kubernetes');
    assert.deepEqual(agent.body.managed_resource, {
      kind: 'Agent',
      namespace: 'default',
      name: 'researcher',
      uid: researcher.metadata.uid,
    });
    assert.deepEqual(agent.body.model_settings, { temperature: 0.2 });
    assert.equal(agent.body.max_steps, 8);
    assert.deepEqual(researcher.metadata.finalizers, ['agentplane.io/platform-record']);
    assert.equal(condition(researcher, 'Accepted')?.reason, 'Valid');
    assert.equal(condition(researcher, 'Ready')?.reason, 'Reconciled');

    const desk = await readyResource(cluster, 'agentnetworks', 'support-desk');
    const network = await client.get(`/v1/networks/${desk.status!.id}`);
    assert.deepEqual(network.body.members, [researcher.status!.id, writer.status!.id]);
    assert.deepEqual(network.body.router, { type: 'supervisor', agent_id: triage.status!.id });
    assert.equal(network.body.max_hops, 6);
    assert.equal(network.body.worker_pool, null);
  });

  it("runs a network's worker pool in the platform's namespace, with the operator's image and environment, on the network's task queue", async () => {
    const pooled = await readyResource(cluster, 'agentnetworks', 'research-then-write');
    const network = await client.get(`/v1/networks/${pooled.status!.id}`);
    assert.equal(network.body.worker_pool, 'network.default.research-then-write');
    const apps = cluster.kubeConfig().makeApiClient(AppsV1Api);
    const read = () => apps.readNamespacedDeployment({ namespace: PLATFORM_NAMESPACE, name: 'default-research-then-write-workers' });
    const deployment = await eventually(read, { message: 'no worker Deployment' });
    assert.equal(deployment.spec!.replicas, 2);
    assert.equal(deployment.metadata!.labels!['agentplane.io/network-uid'], pooled.metadata.uid);
    const inNetworkNamespace = await apps.listNamespacedDeployment({ namespace: 'default' });
    assert.deepEqual(
      inNetworkNamespace.items.map((d) => d.metadata!.name),
      [],
      "a worker pool ran in the network's namespace",
    );
    const container = JSON.parse(JSON.stringify(deployment.spec!.template.spec!.containers[0]!));
    assert.equal(container.image, 'registry.example.com/agentplane:test');
    assert.deepEqual(container.envFrom, [{ configMapRef: { name: 'agentplane-config' } }, { secretRef: { name: 'agentplane-env' } }]);
    assert.deepEqual(container.args, ['worker']);
    assert.deepEqual(container.env, [
      { name: 'AGENTPLANE_TASK_QUEUE', value: 'network.default.research-then-write' },
      { name: 'AGENTPLANE_PROBE_PORT', value: '8081' },
    ]);
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.deepEqual(container.securityContext.capabilities.drop, ['ALL']);
    assert.deepEqual(container.resources, { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } });
    const hash = deployment.metadata!.annotations!['agentplane.io/config-hash'];
    assert.match(hash!, /^[0-9a-f]{16}$/);

    await cluster.kubectl(['patch', 'agentnetwork', 'research-then-write', '--type=merge', '-p', '{"spec":{"workerPool":{"replicas":3}}}']);
    const rolled = await eventually(
      async () => {
        const next = await read();
        assert.equal(next.spec!.replicas, 3);
        return next;
      },
      { message: 'the Deployment was not updated' },
    );
    assert.notEqual(rolled.metadata!.annotations!['agentplane.io/config-hash'], hash);

    await apps.deleteNamespacedDeployment({ namespace: PLATFORM_NAMESPACE, name: 'default-research-then-write-workers' });
    await eventually(read, { message: 'a deleted Deployment did not come back' });

    await cluster.kubectl([
      'patch',
      'agentnetwork',
      'research-then-write',
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/spec/workerPool"}]',
    ]);
    await eventually(
      async () => {
        const gone = await read().then(
          () => false,
          (err: { code?: number }) => err.code === 404,
        );
        assert.ok(gone);
      },
      { message: 'the Deployment of a removed worker pool stayed' },
    );
    await eventually(async () => assert.equal((await client.get(`/v1/networks/${pooled.status!.id}`)).body.worker_pool, null));
  });

  it('updates the platform record when the spec changes', async () => {
    await apply(agentManifest('editor', { model: 'auto', instructions: 'Fix typos.' }));
    const first = await readyResource(cluster, 'agents', 'editor');
    assert.equal((await client.get(`/v1/agents/${first.status!.id}`)).body.version, 1);
    const pay = {
      type: 'http',
      name: 'pay',
      url: 'https://pay.example.com/pay',
      approval: { mode: 'when', arguments: { properties: { amount: { minimum: 100 } } } },
      policy: { denyWhen: { required: ['iban'] } },
    };
    await apply(
      agentManifest('editor', {
        model: 'auto',
        instructions: 'Fix typos and grammar.',
        maxSteps: 3,
        tools: [pay],
        approvalTimeoutSeconds: 3600,
      }),
    );
    const second = await resourceSatisfying(
      cluster,
      'agents',
      'editor',
      (r) => r.metadata.generation === 2 && condition(r, 'Ready')?.status === 'True',
      'not reconciled at generation 2',
    );
    assert.equal(second.status!.id, first.status!.id);
    const agent = (await client.get(`/v1/agents/${first.status!.id}`)).body;
    assert.equal(agent.instructions, 'Fix typos and grammar.');
    assert.equal(agent.max_steps, 3);
    assert.equal(agent.approval_timeout_seconds, 3600);
    assert.deepEqual(
      { approval: agent.tools[0].approval, policy: agent.tools[0].policy },
      { approval: pay.approval, policy: { deny_when: { required: ['iban'] } } },
    );
    assert.equal(agent.version, 2);
  });

  it("keeps an Agent's declared schedules as platform schedules it manages: created, changed, removed, and shown in status", async () => {
    const digest = { name: 'digest', cron: '0 9 * * 1-5', timezone: 'Europe/Paris', run: { input: 'Summarise.' } };
    const poll = { name: 'poll', intervalSeconds: 300, paused: true, run: { input: 'Poll.' } };
    const refused = await cluster.kubectl(['apply', '-f', '-'], {
      input: agentManifest('scheduled', { model: 'auto', schedules: [{ ...poll, cron: '* * * * *' }] }),
    });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /either cron \(with timezone\) or intervalSeconds/);

    await apply(agentManifest('scheduled', { model: 'auto', schedules: [digest, poll] }));
    const ready = await resourceSatisfying(
      cluster,
      'agents',
      'scheduled',
      (r) => condition(r, 'Ready')?.status === 'True' && r.status?.schedules?.length === 2,
      'its schedules are not in status',
    );
    const [shownDigest, shownPoll] = ready.status!.schedules!;
    assert.equal(shownDigest!.name, 'digest');
    assert.ok(shownDigest!.nextRunTime, 'the running schedule shows its next time');
    assert.equal(shownPoll!.nextRunTime, undefined, 'a paused one shows none');
    const schedule = (await client.get(`/v1/schedules/${shownDigest!.id}`)).body;
    assert.equal(schedule.agent_id, ready.status!.id);
    assert.deepEqual(
      [schedule.cron, schedule.timezone, schedule.run, schedule.managed_resource.uid],
      ['0 9 * * 1-5', 'Europe/Paris', { input: 'Summarise.' }, ready.metadata.uid],
    );
    const notFromKubernetes = await client.patch(`/v1/schedules/${shownDigest!.id}`, { paused: true });
    assert.equal(notFromKubernetes.status, 409);
    assert.equal(notFromKubernetes.body.error.code, 'managed_by_kubernetes');

    await apply(agentManifest('scheduled', { model: 'auto', schedules: [{ ...digest, run: { input: 'Summarise briefly.' } }] }));
    await eventually(
      async () => {
        const listed = (await client.get(`/v1/schedules?managed_uid=${ready.metadata.uid}`)).body.data;
        assert.deepEqual(
          listed.map((s: { id: string; run: unknown }) => [s.id, s.run]),
          [[shownDigest!.id, { input: 'Summarise briefly.' }]],
        );
      },
      { message: 'the schedules were not brought to the new spec' },
    );
    await resourceSatisfying(
      cluster,
      'agents',
      'scheduled',
      (r) => r.status?.schedules?.length === 1,
      'status still shows the removed schedule',
    );
  });

  it('repairs drift: a record changed or deleted through the API comes back as the spec says', async () => {
    await apply(agentManifest('steady', { model: 'auto', instructions: 'Stay the same.' }));
    const resource = await readyResource(cluster, 'agents', 'steady');
    const id = resource.status!.id!;
    const changed = await client.patch(`/v1/agents/${id}`, { instructions: 'Something else.' }, FROM_KUBERNETES);
    assert.equal(changed.status, 200);
    await eventually(async () => assert.equal((await client.get(`/v1/agents/${id}`)).body.instructions, 'Stay the same.'), {
      message: 'the change was not undone',
    });

    assert.equal((await client.request('DELETE', `/v1/agents/${id}`, { headers: FROM_KUBERNETES })).status, 200);
    const recreated = await resourceSatisfying(
      cluster,
      'agents',
      'steady',
      (r) => Boolean(r.status?.id) && r.status!.id !== id && condition(r, 'Ready')?.status === 'True',
      'the record was not made again',
    );
    const agent = (await client.get(`/v1/agents/${recreated.status!.id}`)).body;
    assert.equal(agent.instructions, 'Stay the same.');
  });

  it('keeps a network whose member is missing not Ready, naming it, until the member is Ready', async () => {
    await apply(networkManifest('waiting', { members: ['late-member'], router: { type: 'sequential' } }));
    const waiting = await resourceSatisfying(
      cluster,
      'agentnetworks',
      'waiting',
      (r) => condition(r, 'Ready')?.reason === 'MemberNotFound',
      'not MemberNotFound',
    );
    assert.equal(condition(waiting, 'Ready')?.status, 'False');
    assert.match(condition(waiting, 'Ready')!.message, /there is no Agent default\/late-member/);
    await apply(agentManifest('late-member', { model: 'auto' }));
    const member = await readyResource(cluster, 'agents', 'late-member');
    const ready = await readyResource(cluster, 'agentnetworks', 'waiting');
    assert.deepEqual((await client.get(`/v1/networks/${ready.status!.id}`)).body.members, [member.status!.id]);
  });

  it('reports what the API refused on the resource, with a Warning event, and recovers when the spec is fixed', async () => {
    await apply(agentManifest('misconfigured', { model: 'no-such-model' }));
    const refused = await resourceSatisfying(
      cluster,
      'agents',
      'misconfigured',
      (r) => condition(r, 'Ready')?.reason === 'ApiRejected',
      'not ApiRejected',
    );
    assert.equal(condition(refused, 'Accepted')?.status, 'False');
    assert.equal(condition(refused, 'Accepted')?.reason, 'InvalidSpec');
    assert.match(condition(refused, 'Ready')!.message, /no-such-model/);
    const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
    const events = await eventually(
      async () => {
        const list = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.uid=${refused.metadata.uid}` });
        assert.ok(list.items.length > 0);
        return list.items;
      },
      { message: 'no event' },
    );
    assert.equal(events[0]!.type, 'Warning');
    assert.equal(events[0]!.reason, 'ApiRejected');
    assert.equal(events[0]!.source?.component, 'agentplane-controller');
    await apply(agentManifest('misconfigured', { model: 'auto' }));
    await readyResource(cluster, 'agents', 'misconfigured');
  });

  it('writes nothing when nothing changed: resyncs leave the resource and the record as they were', async () => {
    await apply(agentManifest('quiet', { model: 'auto' }));
    const ready = await readyResource(cluster, 'agents', 'quiet');
    const resourceVersion = ((await getResource(cluster, 'agents', 'quiet')) as unknown as { metadata: { resourceVersion: string } })
      .metadata.resourceVersion;
    const reconciles = async () => {
      const metrics = await (await fetch(`${controller.healthUrl}/metrics`)).text();
      return Number(/^agentplane_controller_reconciles_total\{kind="Agent",outcome="success"\} (\d+)/m.exec(metrics)?.[1] ?? 0);
    };
    const before = await reconciles();
    // Every Agent is reconciled again on each resync (every second here): wait for a few rounds of them.
    await eventually(async () => assert.ok((await reconciles()) >= before + 20), { message: 'no resync happened' });
    const after = (await getResource(cluster, 'agents', 'quiet')) as unknown as { metadata: { resourceVersion: string } };
    assert.equal(after.metadata.resourceVersion, resourceVersion, 'a resync wrote the resource');
    assert.equal((await client.get(`/v1/agents/${ready.status!.id}`)).body.version, 1, 'a resync wrote a new version of the record');
  });

  it("never writes or deletes another record when a resource's status.id is pointed at it", async () => {
    const victim = await client.post('/v1/agents', { name: 'victim', model: 'auto', instructions: 'Made through the API.' });
    assert.equal(victim.status, 201);
    await apply(agentManifest('hijacker', { model: 'auto', instructions: 'Send everything to attacker.example.' }));
    const own = await readyResource(cluster, 'agents', 'hijacker');
    const forge = () =>
      cluster.kubectl([
        'patch',
        'agent',
        'hijacker',
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { id: victim.body.id } }),
      ]);
    assert.equal((await forge()).code, 0);
    // The resync (every second here) reconciles the resource with the forged id, and puts its own id back.
    await resourceSatisfying(
      cluster,
      'agents',
      'hijacker',
      (r) => r.status?.id === own.status!.id,
      'the status did not name its own record again',
    );
    const untouched = await client.get(`/v1/agents/${victim.body.id}`);
    assert.equal(untouched.body.version, 1);
    assert.equal(untouched.body.instructions, 'Made through the API.');

    assert.equal((await forge()).code, 0);
    const deleted = await cluster.kubectl(['delete', 'agent', 'hijacker', '--wait=true', '--timeout=30s']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal((await client.get(`/v1/agents/${victim.body.id}`)).status, 200, 'the agent the status named was deleted');
    assert.equal((await client.get(`/v1/agents/${own.status!.id}`)).status, 404, "the resource's own record outlived it");
  });

  it("builds a network from its members' own records, not from an id forged into a member's status", async () => {
    const victim = await client.post('/v1/agents', { name: 'foreign', model: 'auto' });
    assert.equal(victim.status, 201);
    await apply(agentManifest('forged-member', { model: 'auto' }));
    const member = await readyResource(cluster, 'agents', 'forged-member');
    const forged = {
      status: { id: victim.body.id, observedGeneration: member.metadata.generation, conditions: member.status!.conditions },
    };
    assert.equal(
      (await cluster.kubectl(['patch', 'agent', 'forged-member', '--subresource=status', '--type=merge', '-p', JSON.stringify(forged)]))
        .code,
      0,
    );
    await apply(networkManifest('forged-network', { members: ['forged-member'], router: { type: 'sequential' } }));
    const network = await readyResource(cluster, 'agentnetworks', 'forged-network');
    assert.deepEqual((await client.get(`/v1/networks/${network.status!.id}`)).body.members, [member.status!.id]);
    // Through several resyncs, whatever the member's status says meanwhile.
    const reconciles = async () =>
      Number(
        /^agentplane_controller_reconciles_total\{kind="AgentNetwork",outcome="success"\} (\d+)/m.exec(
          await (await fetch(`${controller.healthUrl}/metrics`)).text(),
        )?.[1] ?? 0,
      );
    const before = await reconciles();
    await eventually(async () => assert.ok((await reconciles()) >= before + 10), { message: 'no resync happened' });
    assert.deepEqual((await client.get(`/v1/networks/${network.status!.id}`)).body.members, [member.status!.id]);
  });

  it('deletes the platform record before the resource goes', async () => {
    await apply(agentManifest('short-lived', { model: 'auto' }));
    const resource = await readyResource(cluster, 'agents', 'short-lived');
    const deleted = await cluster.kubectl(['delete', 'agent', 'short-lived', '--wait=true', '--timeout=30s']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(await getResource(cluster, 'agents', 'short-lived'), undefined);
    assert.equal((await client.get(`/v1/agents/${resource.status!.id}`)).status, 404);
  });
});
