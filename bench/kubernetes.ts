/**
 * The controller's latency and burst capacity, against a real kube-apiserver and the API of the stack:
 *
 * Apply → Ready — an Agent created through the Kubernetes API, until its status says Ready for that
 *   generation (seen through a watch), one after another. The baseline, interleaved with it: the two writes
 *   the path cannot avoid, made straight — a ConfigMap created in the same API server and an agent created
 *   through POST /v1/agents. overhead = p50 − baseline p50: the watch, the queue, the reconcile and the
 *   status write.
 * Burst — NETWORKS AgentNetworks (each naming the same five Ready Agents) created at once, 20 requests in
 *   flight, until every one is Ready; against the same number of POST /v1/networks made straight, 20 in
 *   flight. Reported: seconds until all were Ready, and networks per second.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { freePort, stopChild } from '../cli/embedded.js';
import { installCrds, startKubeCluster } from '../test/support/kube.js';
import { scratch } from '../test/support/services.js';
import type { Teardown } from './stack.js';

export interface KubernetesSettings {
  warmups: number;
  samples: number;
  burst: number;
  inFlight: number;
}

export interface Latencies {
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  samples: number;
}

export interface KubernetesFigures {
  applyToReady: Latencies;
  baseline: Latencies;
  burst: { networks: number; secondsToAllReady: number; networksPerSecond: number; baselineSeconds: number };
}

const GROUP = 'agentplane.io';
const VERSION = 'v1alpha1';
const NAMESPACE = 'default';
const READY_TIMEOUT_MS = 300_000;
const cli = fileURLToPath(new URL('../cli/agentplane.js', import.meta.url));
const crdsDir = fileURLToPath(new URL('../../crds/', import.meta.url));

interface Resource {
  metadata: { name: string; generation?: number };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
}

/** Resolves `until(name)` when the watched resource of that name is Ready for its current generation. */
class ReadyWatch {
  private readonly waiting = new Map<string, () => void>();
  private readonly ready = new Set<string>();
  private request: { abort(): void } | undefined;

  constructor(
    private readonly kc: KubeConfig,
    private readonly plural: string,
  ) {}

  async start(): Promise<void> {
    const watch = new Watch(this.kc);
    this.request = await watch.watch(
      `/apis/${GROUP}/${VERSION}/namespaces/${NAMESPACE}/${this.plural}`,
      {},
      (_type: string, object: Resource) => {
        const name = object.metadata.name;
        const isReady =
          object.status?.observedGeneration === object.metadata.generation &&
          object.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        if (!isReady) return;
        this.ready.add(name);
        this.waiting.get(name)?.();
      },
      (err: unknown) => {
        if (err && (err as Error).name !== 'AbortError') console.error(`bench: the ${this.plural} watch ended: ${String(err)}`);
      },
    );
  }

  until(name: string): Promise<void> {
    if (this.ready.has(name)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.plural}/${name} was not Ready within ${READY_TIMEOUT_MS / 1000} s`)),
        READY_TIMEOUT_MS,
      );
      this.waiting.set(name, () => {
        clearTimeout(timer);
        this.waiting.delete(name);
        resolve();
      });
    });
  }

  stop(): void {
    this.request?.abort();
  }
}

function latencies(samples: number[]): Latencies {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return {
    p50Ms: Math.round(at(0.5)),
    p99Ms: Math.round(at(0.99)),
    meanMs: Math.round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
    samples: sorted.length,
  };
}

async function inBatches<T>(items: T[], inFlight: number, each: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < items.length) await each(items[next++]!);
    }),
  );
}

async function startController(teardown: Teardown, env: Record<string, string>): Promise<ChildProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [cli, 'controller'], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  teardown.add('controller', () => stopChild(child));
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the controller exited (${child.exitCode}):\n${output}`);
    const status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return child;
    if (Date.now() > deadline) throw new Error(`the controller was not ready within 60 s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function measureKubernetes(
  teardown: Teardown,
  target: { apiUrl: string; adminKey: string },
  settings: KubernetesSettings,
): Promise<KubernetesFigures> {
  const cluster = await startKubeCluster('bench');
  teardown.add('kube-apiserver and etcd', async () => {
    await cluster.stop();
    await rm(await scratch, { recursive: true, force: true });
  });
  await installCrds(cluster, crdsDir);
  await startController(teardown, {
    KUBECONFIG: cluster.kubeconfig,
    AGENTPLANE_API_URL: target.apiUrl,
    AGENTPLANE_API_KEY: target.adminKey,
    AGENTPLANE_LEADER_ELECTION: 'false',
    LOG_LEVEL: 'warn',
  });

  const kc = cluster.kubeConfig();
  const objects = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const agents = new ReadyWatch(kc, 'agents');
  const networks = new ReadyWatch(kc, 'agentnetworks');
  await Promise.all([agents.start(), networks.start()]);
  teardown.add('watches', async () => (agents.stop(), networks.stop()));
  const auth = { authorization: `Bearer ${target.adminKey}`, 'content-type': 'application/json' };

  const createAgent = (name: string) =>
    objects.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NAMESPACE,
      plural: 'agents',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'Agent',
        metadata: { name },
        spec: { model: 'auto', instructions: 'Answer briefly.' },
      },
    });
  const directly = async (index: number) => {
    await core.createNamespacedConfigMap({
      namespace: NAMESPACE,
      body: { metadata: { name: `baseline-${index}` }, data: { model: 'auto' } },
    });
    const response = await fetch(`${target.apiUrl}/v1/agents`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: `baseline-${index}`, model: 'auto', instructions: 'Answer briefly.' }),
    });
    if (response.status !== 201) throw new Error(`POST /v1/agents answered ${response.status}: ${await response.text()}`);
  };

  const applied: number[] = [];
  const baseline: number[] = [];
  for (let i = 0; i < settings.warmups + settings.samples; i++) {
    let started = performance.now();
    await createAgent(`agent-${i}`);
    await agents.until(`agent-${i}`);
    const applyMs = performance.now() - started;
    started = performance.now();
    await directly(i);
    const baselineMs = performance.now() - started;
    if (i >= settings.warmups) {
      applied.push(applyMs);
      baseline.push(baselineMs);
    }
  }

  const members = ['agent-0', 'agent-1', 'agent-2', 'agent-3', 'agent-4'];
  const memberIds = await Promise.all(
    members.map(async (name) => {
      const agent = (await objects.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: NAMESPACE,
        plural: 'agents',
        name,
      })) as { status: { id: string } };
      return agent.status.id;
    }),
  );
  const names = Array.from({ length: settings.burst }, (_, i) => `network-${i}`);
  let started = performance.now();
  await inBatches(names, settings.inFlight, (name) =>
    objects.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NAMESPACE,
      plural: 'agentnetworks',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'AgentNetwork',
        metadata: { name },
        spec: { members, router: { type: 'sequential' } },
      },
    }),
  );
  await Promise.all(names.map((name) => networks.until(name)));
  const secondsToAllReady = (performance.now() - started) / 1000;

  started = performance.now();
  await inBatches(names, settings.inFlight, async (name) => {
    const response = await fetch(`${target.apiUrl}/v1/networks`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: `direct-${name}`, members: memberIds, router: { type: 'sequential' } }),
    });
    if (response.status !== 201) throw new Error(`POST /v1/networks answered ${response.status}: ${await response.text()}`);
  });
  const baselineSeconds = (performance.now() - started) / 1000;

  return {
    applyToReady: latencies(applied),
    baseline: latencies(baseline),
    burst: { networks: settings.burst, secondsToAllReady, networksPerSecond: settings.burst / secondsToAllReady, baselineSeconds },
  };
}
