import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { newTenant, startTestApi, type TestApi } from '../support/api.js';
import type { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import type { KubeCluster } from '../support/kube.js';
import { isolatedNamespace } from '../support/services.js';
import {
  agentManifest,
  applyManifest,
  condition,
  controllerConfig,
  getResource,
  readyResource,
  resourceSatisfying,
  runController,
  startClusterWithCrds,
} from '../support/controller.js';
import type { RunningController } from '../../controllers/controller.js';

/**
 * The platform API behind a loopback proxy that can be taken away and brought back on the same port, as an
 * API whose pods are all restarting looks to the controller: connections refused.
 */
async function startProxy(target: string): Promise<{ url: string; down(): Promise<void>; up(): Promise<void> }> {
  let server: Server | undefined;
  let port = 0;
  const up = async () => {
    server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = Object.fromEntries(
        Object.entries(req.headers)
          .filter(([name]) => name !== 'host' && name !== 'connection')
          .map(([n, v]) => [n, String(v)]),
      );
      const answer = await fetch(target + req.url, {
        method: req.method,
        headers,
        body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      });
      res.writeHead(answer.status, Object.fromEntries(answer.headers));
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', () => resolve()));
    port = (server!.address() as AddressInfo).port;
  };
  await up();
  return {
    url: `http://127.0.0.1:${port}`,
    up,
    down: () => new Promise((resolve) => (server!.closeAllConnections(), server!.close(() => resolve()))),
  };
}

async function isLeader(controller: RunningController): Promise<boolean> {
  const metrics = await (await fetch(`${controller.healthUrl}/metrics`)).text();
  return /^agentplane_controller_leader 1$/m.test(metrics);
}

describe('the controller under faults', function () {
  this.timeout(180_000);
  let api: TestApi;
  let client: ApiClient;
  let cluster: KubeCluster;

  const apply = (manifest: string) => applyManifest(cluster, manifest);

  before(async () => {
    api = await startTestApi({ namespace: await isolatedNamespace('controller-faults') });
    client = await (await newTenant(api, 'controller-faults')).keyWith('agents:read', 'agents:write');
    cluster = await startClusterWithCrds('controller-faults');
  });

  after(async () => {
    await cluster?.stop();
    await api?.stop();
  });

  it('marks resources ApiUnavailable with a Warning event while the platform API is down, and catches up when it is back', async () => {
    const proxy = await startProxy(api.url);
    const controller = await runController(cluster, controllerConfig(proxy.url, client.key!));
    try {
      await apply(agentManifest('before-outage'));
      await readyResource(cluster, 'agents', 'before-outage');
      await proxy.down();
      await apply(agentManifest('during-outage'));
      const waiting = await resourceSatisfying(
        cluster,
        'agents',
        'during-outage',
        (r) => condition(r, 'Ready')?.reason === 'ApiUnavailable',
        'not ApiUnavailable',
      );
      assert.equal(condition(waiting, 'Ready')?.status, 'False');
      assert.match(condition(waiting, 'Ready')!.message, /did not answer/);
      const events = await cluster.kubectl([
        'get',
        'events',
        '--field-selector',
        `involvedObject.name=during-outage,reason=ApiUnavailable`,
        '-o',
        'json',
      ]);
      assert.equal(JSON.parse(events.stdout).items[0].type, 'Warning');
      await proxy.up();
      const recovered = await readyResource(cluster, 'agents', 'during-outage');
      assert.equal((await client.get(`/v1/agents/${recovered.status!.id}`)).status, 200);
      assert.equal(
        (await client.get(`/v1/agents?managed_uid=${recovered.metadata.uid}`)).body.data.length,
        1,
        'the outage left a duplicate record',
      );
    } finally {
      await controller.stop();
      await proxy.down().catch(() => {});
    }
  });

  it("says on a resource being deleted that the platform refuses the controller's key, and completes the deletion once the key's Secret holds a valid one", async () => {
    const tenant = await newTenant(api, 'key-rotation');
    const first = await tenant.keyWith('agents:read', 'agents:write');
    const secret = (key: string) =>
      cluster.kubectl(['apply', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'controller-key', namespace: 'default' },
          stringData: { 'api-key': key },
        }),
      });
    assert.equal((await secret(first.key!)).code, 0);
    const controller = await runController(
      cluster,
      controllerConfig(api.url, 'unused', { apiKey: undefined, apiKeySecret: { namespace: 'default', name: 'controller-key' } }),
    );
    try {
      await apply(agentManifest('outlives-its-key'));
      const ready = await readyResource(cluster, 'agents', 'outlives-its-key');
      const keys = await tenant.admin.get('/v1/api-keys?limit=100');
      const revoked = keys.body.data.find((k: { name: string }) => k.name === 'key-rotation agents:read agents:write');
      assert.equal((await tenant.admin.delete(`/v1/api-keys/${revoked.id}`)).status, 200);

      assert.equal((await cluster.kubectl(['delete', 'agent', 'outlives-its-key', '--wait=false'])).code, 0);
      const waiting = await eventually(
        async () => {
          const resource = await getResource(cluster, 'agents', 'outlives-its-key');
          const ready = condition(resource, 'Ready');
          assert.equal(ready?.reason, 'ApiKeyRefused', JSON.stringify(resource?.status));
          // A pass begun before the deletion was seen may say first that the key is refused; the deletion's own
          // pass says so too, and what would end the wait.
          assert.match(ready!.message, /^Waiting to delete the platform record: /);
          return resource!;
        },
        { message: 'the refusal was not reported on the resource' },
      );
      const { status, message } = condition(waiting, 'Ready')!;
      assert.equal(status, 'False');
      assert.match(message, /answered 401/);
      assert.match(
        message,
        /put a valid key \(scopes agents:read and agents:write, and schedules:read and schedules:write for declared schedules\) in the Secret default\/controller-key \(key api-key\)/,
      );
      assert.match(
        message,
        /kubectl patch agents\.agentplane\.io outlives-its-key -n default --type=json -p '\[\{"op":"remove","path":"\/metadata\/finalizers"\}\]'/,
      );
      assert.equal((await tenant.admin.get(`/v1/agents/${ready.status!.id}`)).status, 200);

      const second = await tenant.keyWith('agents:read', 'agents:write');
      assert.equal((await secret(second.key!)).code, 0);
      await eventually(async () => assert.equal(await getResource(cluster, 'agents', 'outlives-its-key'), undefined), {
        message: 'the deletion did not complete with the new key',
      });
      assert.equal((await tenant.admin.get(`/v1/agents/${ready.status!.id}`)).status, 404);
    } finally {
      await controller.stop();
    }
  });

  it('rides out a restart of the Kubernetes API server: its watches start again and it goes on reconciling', async () => {
    const controller = await runController(cluster, controllerConfig(api.url, client.key!));
    try {
      await apply(agentManifest('before-apiserver-restart'));
      await readyResource(cluster, 'agents', 'before-apiserver-restart');
      await cluster.stopApiServer();
      await cluster.startApiServer();
      await apply(agentManifest('after-apiserver-restart'));
      await readyResource(cluster, 'agents', 'after-apiserver-restart');
      const metrics = await (await fetch(`${controller.healthUrl}/metrics`)).text();
      assert.match(metrics, /^agentplane_controller_watch_restarts_total\{kind="Agent"\} [1-9]/m);
    } finally {
      await controller.stop();
    }
  });

  it('lists again when its watch cannot resume (410 Gone: history compacted while the API server was away)', async () => {
    const controller = await runController(cluster, controllerConfig(api.url, client.key!));
    try {
      await apply(agentManifest('before-compaction'));
      await readyResource(cluster, 'agents', 'before-compaction');
      await cluster.stopApiServer();
      // A write of etcd's own moves its revision past the last the controller's watch saw (which the API
      // server could otherwise resume from, were nothing written since); then everything up to it is compacted.
      const put = await fetch(`${cluster.etcdUrl}/v3/kv/put`, {
        method: 'POST',
        body: JSON.stringify({
          key: Buffer.from('/agentplane-test/revision').toString('base64'),
          value: Buffer.from('1').toString('base64'),
        }),
      });
      assert.equal(put.status, 200, await put.text());
      const range = await fetch(`${cluster.etcdUrl}/v3/kv/range`, {
        method: 'POST',
        body: JSON.stringify({ key: Buffer.from('/').toString('base64'), limit: 1 }),
      });
      const revision = ((await range.json()) as { header: { revision: string } }).header.revision;
      const compacted = await fetch(`${cluster.etcdUrl}/v3/kv/compaction`, {
        method: 'POST',
        body: JSON.stringify({ revision, physical: true }),
      });
      assert.equal(compacted.status, 200, await compacted.text());
      await cluster.startApiServer();
      await apply(agentManifest('after-compaction'));
      await readyResource(cluster, 'agents', 'after-compaction');
      const metrics = await (await fetch(`${controller.healthUrl}/metrics`)).text();
      assert.match(metrics, /^agentplane_controller_relists_total\{kind="Agent"\} [1-9]/m);
    } finally {
      await controller.stop();
    }
  });

  it('is not ready until its watches have listed: started while the API server is down, /readyz answers 503 until it is back', async () => {
    await cluster.stopApiServer();
    let controller: RunningController | undefined;
    try {
      controller = await runController(cluster, controllerConfig(api.url, client.key!));
      const url = controller.healthUrl;
      await eventually(
        async () =>
          assert.match(await (await fetch(`${url}/metrics`)).text(), /^agentplane_controller_watch_restarts_total\{kind="Agent"\} [1-9]/m),
        { message: 'no failed list' },
      );
      assert.equal((await fetch(`${url}/readyz`)).status, 503);
      assert.equal((await fetch(`${url}/healthz`)).status, 200);
    } finally {
      await cluster.startApiServer();
    }
    try {
      await eventually(async () => assert.equal((await fetch(`${controller!.healthUrl}/readyz`)).status, 200), {
        timeoutMs: 60_000,
        message: 'not ready once the API server was back',
      });
      await apply(agentManifest('after-a-late-start'));
      await readyResource(cluster, 'agents', 'after-a-late-start');
    } finally {
      await controller?.stop();
    }
  });

  it('picks up, after a restart, what changed while it was stopped', async () => {
    let controller = await runController(cluster, controllerConfig(api.url, client.key!));
    await apply(agentManifest('kept'));
    await apply(agentManifest('removed-while-down'));
    const removed = await readyResource(cluster, 'agents', 'removed-while-down');
    await readyResource(cluster, 'agents', 'kept');
    await controller.stop();

    await apply(agentManifest('made-while-down'));
    await apply(agentManifest('kept', { model: 'auto', instructions: 'Changed while the controller was down.' }));
    const deleting = await cluster.kubectl(['delete', 'agent', 'removed-while-down', '--wait=false']);
    assert.equal(deleting.code, 0, deleting.stderr);
    // The finalizer holds the resource until a controller has deleted its record.
    assert.ok((await getResource(cluster, 'agents', 'removed-while-down'))?.metadata);

    controller = await runController(cluster, controllerConfig(api.url, client.key!));
    try {
      await readyResource(cluster, 'agents', 'made-while-down');
      const kept = await resourceSatisfying(
        cluster,
        'agents',
        'kept',
        (r) => r.metadata.generation === 2 && condition(r, 'Ready')?.status === 'True',
        'the change was not picked up',
      );
      assert.equal((await client.get(`/v1/agents/${kept.status!.id}`)).body.instructions, 'Changed while the controller was down.');
      await eventually(async () => assert.equal(await getResource(cluster, 'agents', 'removed-while-down'), undefined), {
        message: 'the deleted resource stayed',
      });
      assert.equal((await client.get(`/v1/agents/${removed.status!.id}`)).status, 404);
    } finally {
      await controller.stop();
    }
  });

  it('elects one leader among two replicas, and the other takes over when the leader stops', async () => {
    const config = (identity: string) =>
      controllerConfig(api.url, client.key!, { leaderElection: true, leaseNamespace: 'default', identity });
    const first = await runController(cluster, config('replica-a'));
    const second = await runController(cluster, config('replica-b'));
    let stopped: RunningController | undefined;
    try {
      const leader = await eventually(
        async () => {
          const [a, b] = [await isLeader(first), await isLeader(second)];
          assert.ok(a !== b, `leaders: a=${a} b=${b}`);
          return a ? first : second;
        },
        { message: 'not exactly one leader' },
      );
      const standby = leader === first ? second : first;
      await apply(agentManifest('led-by-first'));
      await readyResource(cluster, 'agents', 'led-by-first');
      assert.equal(await isLeader(standby), false);

      await leader.stop();
      stopped = leader;
      await eventually(async () => assert.ok(await isLeader(standby)), { timeoutMs: 30_000, message: 'the standby did not take over' });
      await apply(agentManifest('led-by-second'));
      await readyResource(cluster, 'agents', 'led-by-second');
      const lease = await cluster.kubectl([
        'get',
        'lease',
        'agentplane-controller',
        '-n',
        'default',
        '-o',
        'jsonpath={.spec.holderIdentity} {.spec.leaseTransitions}',
      ]);
      const [holder, transitions] = lease.stdout.split(' ');
      assert.equal(holder, standby === first ? 'replica-a' : 'replica-b');
      assert.ok(Number(transitions) >= 1);
    } finally {
      for (const controller of [first, second]) if (controller !== stopped) await controller.stop();
    }
  });
});
