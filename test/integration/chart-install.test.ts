import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { startTestApi, type TestApi } from '../support/api.js';
import { ensureControllerKey } from '../../records/controller-key.js';
import { isolatedNamespace } from '../support/services.js';
import type { KubeCluster } from '../support/kube.js';
import { controllerConfig, examplesDir, readyResource } from '../support/controller.js';
import { startKubeCluster } from '../support/kube.js';
import { startController } from '../../controllers/controller.js';
import { chart, helm } from '../support/helm.js';

const RELEASE_NAMESPACE = 'agentplane-system';

describe('the Helm chart installed into a real API server', function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let api: TestApi;

  const install = (release: string, ...set: string[]) =>
    helm([
      'install',
      release,
      chart,
      '--kubeconfig',
      cluster.kubeconfig,
      '-n',
      RELEASE_NAMESPACE,
      '--create-namespace',
      '-f',
      join(chart, 'ci', 'defaults-values.yaml'),
      // The migrations Job and the Secrets it needs are hooks: with no controller-manager, no Job completes.
      '--no-hooks',
      ...set.flatMap((s) => ['--set', s]),
    ]);

  before(async () => {
    cluster = await startKubeCluster('chart');
    api = await startTestApi({ namespace: await isolatedNamespace('chart-install') });
  });

  after(async () => {
    await api?.stop();
    await cluster?.stop();
  });

  it('installs with its CRDs and RBAC, and uninstalls leaving the CRDs and the admin key', async () => {
    const installed = await install('first');
    assert.equal(installed.code, 0, installed.stderr);
    const crds = await cluster.kubectl(['get', 'crd', 'agents.agentplane.io', 'agentnetworks.agentplane.io']);
    assert.equal(crds.code, 0, crds.stderr);
    const deployments = await cluster.kubectl(['get', 'deployments', '-n', RELEASE_NAMESPACE, '-o', 'name']);
    assert.deepEqual(deployments.stdout.trim().split('\n').sort(), [
      'deployment.apps/first-agentplane-api',
      'deployment.apps/first-agentplane-controller',
      'deployment.apps/first-agentplane-worker',
    ]);
    const key = await cluster.kubectl([
      'get',
      'secret',
      'first-agentplane-admin-key',
      '-n',
      RELEASE_NAMESPACE,
      '-o',
      'jsonpath={.data.api-key}',
    ]);
    const adminKey = Buffer.from(key.stdout, 'base64').toString();
    assert.match(adminKey, /^ap_[A-Za-z0-9]{40}$/);
    const controllerKey = async () =>
      Buffer.from(
        (
          await cluster.kubectl([
            'get',
            'secret',
            'first-agentplane-controller-key',
            '-n',
            RELEASE_NAMESPACE,
            '-o',
            'jsonpath={.data.api-key}',
          ])
        ).stdout,
        'base64',
      ).toString();
    const ownKey = await controllerKey();
    assert.match(ownKey, /^ap_[A-Za-z0-9]{40}$/);
    assert.notEqual(ownKey, adminKey, 'the controller holds the admin key');

    const upgraded = await helm([
      'upgrade',
      'first',
      chart,
      '--kubeconfig',
      cluster.kubeconfig,
      '-n',
      RELEASE_NAMESPACE,
      '-f',
      join(chart, 'ci', 'defaults-values.yaml'),
      '--no-hooks',
    ]);
    assert.equal(upgraded.code, 0, upgraded.stderr);
    const kept = await cluster.kubectl([
      'get',
      'secret',
      'first-agentplane-admin-key',
      '-n',
      RELEASE_NAMESPACE,
      '-o',
      'jsonpath={.data.api-key}',
    ]);
    assert.equal(Buffer.from(kept.stdout, 'base64').toString(), adminKey, 'an upgrade changed the admin key');
    assert.equal(await controllerKey(), ownKey, "an upgrade changed the controller's key");

    const uninstalled = await helm(['uninstall', 'first', '--kubeconfig', cluster.kubeconfig, '-n', RELEASE_NAMESPACE]);
    assert.equal(uninstalled.code, 0, uninstalled.stderr);
    assert.equal((await cluster.kubectl(['get', 'crd', 'agents.agentplane.io'])).code, 0, 'the CRDs went with the release');
    assert.equal(
      (await cluster.kubectl(['get', 'secret', 'first-agentplane-admin-key', '-n', RELEASE_NAMESPACE])).code,
      0,
      'the admin key went with the release',
    );
    assert.notEqual((await cluster.kubectl(['get', 'deployment', 'first-agentplane-api', '-n', RELEASE_NAMESPACE])).code, 0);
  });

  it('installs with no values: the evaluation StatefulSet, its admin key, and notes that say it is not for production', async () => {
    const installed = await helm(['install', 'trial', chart, '--kubeconfig', cluster.kubeconfig, '-n', 'trial', '--create-namespace']);
    assert.equal(installed.code, 0, installed.stderr);
    assert.match(installed.stdout, /NOT FOR PRODUCTION/);
    assert.match(installed.stdout, /layout: production/);
    const workloads = await cluster.kubectl(['get', 'statefulsets,deployments,jobs', '-n', 'trial', '-o', 'name']);
    assert.deepEqual(workloads.stdout.trim().split('\n').sort(), [
      'deployment.apps/trial-agentplane-controller',
      'statefulset.apps/trial-agentplane',
    ]);
    const key = await cluster.kubectl(['get', 'secret', 'trial-agentplane-admin-key', '-n', 'trial', '-o', 'jsonpath={.data.api-key}']);
    assert.match(Buffer.from(key.stdout, 'base64').toString(), /^ap_[A-Za-z0-9]{40}$/);
    const uninstalled = await helm(['uninstall', 'trial', '--kubeconfig', cluster.kubeconfig, '-n', 'trial']);
    assert.equal(uninstalled.code, 0, uninstalled.stderr);
  });

  it("runs the controller under the chart's RBAC, as its ServiceAccount, with the key the chart made for it, without a single 403", async () => {
    const installed = await install('second');
    assert.equal(installed.code, 0, installed.stderr);
    // What the API's pods do with AGENTPLANE_CONTROLLER_KEY, which the chart sets from this Secret.
    const secret = await cluster.kubectl([
      'get',
      'secret',
      'second-agentplane-controller-key',
      '-n',
      RELEASE_NAMESPACE,
      '-o',
      'jsonpath={.data.api-key}',
    ]);
    await ensureControllerKey(api.services.db, Buffer.from(secret.stdout, 'base64').toString());
    const kubeconfig = await cluster.serviceAccountKubeconfig(RELEASE_NAMESPACE, 'second-agentplane-controller');
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);

    const lines: string[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    const config = controllerConfig(api.url, 'unused', {
      apiKey: undefined,
      apiKeySecret: { namespace: RELEASE_NAMESPACE, name: 'second-agentplane-controller-key' },
      workerPoolNamespace: RELEASE_NAMESPACE,
      leaderElection: true,
      leaseNamespace: RELEASE_NAMESPACE,
      identity: 'second-agentplane-controller-0',
    });
    const controller = await startController(config, kc, log);
    try {
      const applied = await cluster.kubectl(['apply', '-n', 'default', '-f', examplesDir]);
      assert.equal(applied.code, 0, applied.stderr);
      for (const name of ['researcher', 'writer', 'triage']) await readyResource(cluster, 'agents', name);
      for (const name of ['support-desk', 'research-then-write']) await readyResource(cluster, 'agentnetworks', name);
      const deleted = await cluster.kubectl(['delete', '-n', 'default', '-f', examplesDir, '--wait=true', '--timeout=60s']);
      assert.equal(deleted.code, 0, deleted.stderr);
    } catch (err) {
      throw new Error(`${(err as Error).message}\ncontroller log:\n${lines.slice(-30).join('')}`, { cause: err });
    } finally {
      await controller.stop();
    }
    const forbidden = lines.filter((line) => /forbidden|\b403\b/i.test(line));
    assert.deepEqual(forbidden, []);
    assert.ok(lines.some((line) => line.includes('became the leader')));
    assert.ok(lines.some((line) => line.includes('lease released')));
  });
});
