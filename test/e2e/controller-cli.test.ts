import assert from 'node:assert/strict';
import { newTenant, startTestApi, type TestApi } from '../support/api.js';
import { eventually } from '../support/eventually.js';
import type { KubeCluster } from '../support/kube.js';
import { isolatedNamespace } from '../support/services.js';
import { runCli } from '../support/processes.js';
import { createServer } from 'node:net';
import { freePort } from '../../cli/embedded.js';
import { scratch } from '../support/services.js';
import { readyResource, startClusterWithCrds } from '../support/controller.js';
import { startJaeger, tagOf, tracesOf, type JaegerServer } from '../support/jaeger.js';

describe('agentplane controller', function () {
  this.timeout(120_000);
  let api: TestApi;
  let cluster: KubeCluster;
  let key: string;
  let jaeger: JaegerServer;

  before(async () => {
    jaeger = await startJaeger();
    api = await startTestApi({ namespace: await isolatedNamespace('controller-cli') });
    key = (await (await newTenant(api, 'controller-cli')).keyWith('agents:read', 'agents:write')).key!;
    cluster = await startClusterWithCrds('controller-cli');
  });

  after(async () => {
    await cluster?.stop();
    await api?.stop();
    await jaeger?.stop();
  });

  const refusals: [string, Record<string, string>, RegExp][] = [
    ['no API URL', {}, /set AGENTPLANE_API_URL/],
    ['no API key', { AGENTPLANE_API_URL: 'http://127.0.0.1:1' }, /set AGENTPLANE_API_KEY, or AGENTPLANE_API_KEY_SECRET/],
    [
      'a Secret name that is not namespace/name',
      { AGENTPLANE_API_URL: 'http://127.0.0.1:1', AGENTPLANE_API_KEY_SECRET: 'just-a-name' },
      /AGENTPLANE_API_KEY_SECRET must be namespace\/name/,
    ],
    [
      'no kubeconfig outside a pod',
      { AGENTPLANE_API_URL: 'http://127.0.0.1:1', AGENTPLANE_API_KEY: 'ap_x' },
      /set KUBECONFIG, or run the controller in a pod/,
    ],
    [
      'leader election that is not true or false',
      { AGENTPLANE_API_URL: 'http://127.0.0.1:1', AGENTPLANE_API_KEY: 'ap_x', AGENTPLANE_LEADER_ELECTION: 'yes' },
      /AGENTPLANE_LEADER_ELECTION must be true or false/,
    ],
  ];
  for (const [what, env, message] of refusals) {
    it(`refuses to start with ${what}, naming the variable`, async () => {
      const controller = runCli('controller', env);
      const { code } = await controller.exited;
      assert.notEqual(code, 0);
      assert.match(controller.output(), message);
    });
  }

  it('reconciles what kubectl applies, answers its probes, traces each pass, and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const controller = runCli('controller', {
      KUBECONFIG: cluster.kubeconfig,
      AGENTPLANE_API_URL: api.url,
      AGENTPLANE_API_KEY: key,
      AGENTPLANE_LEADER_ELECTION_NAMESPACE: 'default',
      AGENTPLANE_PROBE_PORT: String(port),
      HOST: '127.0.0.1',
      OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
    });
    try {
      await eventually(async () => assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200), {
        message: `not ready:\n${controller.output()}`,
      });
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
      const applied = await cluster.kubectl(['apply', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'agentplane.io/v1alpha1',
          kind: 'Agent',
          metadata: { name: 'from-cli' },
          spec: { model: 'auto' },
        }),
      });
      assert.equal(applied.code, 0, applied.stderr);
      await readyResource(cluster, 'agents', 'from-cli');
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      assert.match(metrics, /^agentplane_controller_reconciles_total\{kind="Agent",outcome="success"\} [1-9]/m);
      assert.match(metrics, /^agentplane_controller_leader 1$/m);
      assert.match(metrics, /^agentplane_controller_queue_depth /m);
      assert.match(metrics, /^agentplane_controller_reconcile_duration_seconds_bucket/m);
    } finally {
      controller.child.kill('SIGTERM');
    }
    const { code } = await controller.exited;
    assert.equal(code, 0, controller.output());
    const lease = await cluster.kubectl([
      'get',
      'lease',
      'agentplane-controller',
      '-n',
      'default',
      '-o',
      'jsonpath={.spec.holderIdentity}',
    ]);
    assert.equal(lease.stdout, '', 'the lease was not released on SIGTERM');
    // Its spans were sent before it exited: a pass per reconcile, named by the kind.
    const traces = await eventually(
      async () => {
        const found = await tracesOf(jaeger, 'agentplane-controller', 'reconcile Agent');
        assert.ok(found.length > 0, 'no reconcile span');
        return found;
      },
      { timeoutMs: 10_000, message: 'the controller exported no reconcile span' },
    );
    const passes = traces.flatMap((trace) => trace.spans).filter((span) => span.operationName === 'reconcile Agent');
    assert.ok(passes.some((span) => tagOf(span, 'agentplane.resource.name') === 'from-cli'));
  });

  describe('with its probe port taken', () => {
    let taken: ReturnType<typeof createServer>;
    let port: number;
    before(async () => {
      port = await freePort();
      taken = createServer();
      await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', () => resolve()));
    });
    after(() => new Promise<void>((resolve) => taken.close(() => resolve())));

    const probePorts: [string, string][] = [
      ['AGENTPLANE_PROBE_PORT', 'AGENTPLANE_PROBE_PORT'],
      ['PORT, the earlier name', 'PORT'],
    ];
    for (const [what, variable] of probePorts) {
      it(`exits naming AGENTPLANE_PROBE_PORT, without a stack trace, when ${what} is taken`, async () => {
        const env = {
          KUBECONFIG: cluster.kubeconfig,
          AGENTPLANE_API_URL: api.url,
          AGENTPLANE_API_KEY: key,
          AGENTPLANE_LEADER_ELECTION: 'false',
          HOST: '127.0.0.1',
          [variable]: String(port),
        };
        const controller = runCli('controller', env);
        const { code } = await controller.exited;
        assert.equal(code, 1);
        assert.match(
          controller.output(),
          new RegExp(`^agentplane: 127\\.0\\.0\\.1:${port} is already in use; set AGENTPLANE_PROBE_PORT to a free port\\.$`, 'm'),
        );
        assert.doesNotMatch(controller.output(), /\n\s+at /, 'a stack trace');
      });
    }

    it('the worker too: exits naming AGENTPLANE_PROBE_PORT, without a stack trace', async () => {
      const worker = runCli('worker', {
        DATABASE_URL: 'postgres://agentplane@127.0.0.1:1/agentplane',
        TEMPORAL_ADDRESS: '127.0.0.1:1',
        AGENTPLANE_BLOB_DIR: await scratch,
        AGENTPLANE_PROBE_PORT: String(port),
        HOST: '127.0.0.1',
      });
      const { code } = await worker.exited;
      assert.equal(code, 1);
      assert.match(
        worker.output(),
        new RegExp(`^agentplane: 127\\.0\\.0\\.1:${port} is already in use; set AGENTPLANE_PROBE_PORT to a free port\\.$`, 'm'),
      );
      assert.doesNotMatch(worker.output(), /\n\s+at /, 'a stack trace');
    });
  });
});
