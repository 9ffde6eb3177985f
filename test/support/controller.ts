/**
 * The controller against a real kube-apiserver (with the CRDs) and a real platform API, for the suites:
 * reads and waits on resources as kubectl would.
 */
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import { controllerConfigFrom, type ControllerConfig } from '../../controllers/config.js';
import { startController, type RunningController } from '../../controllers/controller.js';
import { installCrds, startKubeCluster, type KubeCluster } from './kube.js';
import { eventually } from './eventually.js';

export const crdsDir = fileURLToPath(new URL('../../../crds/', import.meta.url));
export const examplesDir = fileURLToPath(new URL('../../../examples/', import.meta.url));

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export interface KubeResource {
  metadata: { name: string; namespace: string; uid: string; generation: number; finalizers?: string[] };
  spec: Record<string, unknown>;
  status?: {
    id?: string;
    observedGeneration?: number;
    conditions?: Condition[];
    schedules?: { name: string; id: string; nextRunTime?: string }[];
  };
}

export function agentManifest(name: string, spec: Record<string, unknown> = { model: 'auto' }): string {
  return JSON.stringify({ apiVersion: 'agentplane.io/v1alpha1', kind: 'Agent', metadata: { name }, spec });
}

export function networkManifest(name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: 'agentplane.io/v1alpha1', kind: 'AgentNetwork', metadata: { name }, spec });
}

/** `kubectl apply` of one manifest; fails the test with kubectl's message. */
export async function applyManifest(cluster: KubeCluster, manifest: string): Promise<void> {
  const result = await cluster.kubectl(['apply', '-f', '-'], { input: manifest });
  if (result.code !== 0) throw new Error(`kubectl apply failed: ${result.stderr}`);
}

export async function startClusterWithCrds(name: string): Promise<KubeCluster> {
  const cluster = await startKubeCluster(name);
  await installCrds(cluster, crdsDir);
  return cluster;
}

export function controllerConfig(apiUrl: string, apiKey: string, overrides: Partial<ControllerConfig> = {}): ControllerConfig {
  return {
    ...controllerConfigFrom({
      AGENTPLANE_API_URL: apiUrl,
      AGENTPLANE_API_KEY: apiKey,
      AGENTPLANE_LEADER_ELECTION: 'false',
      AGENTPLANE_PROBE_PORT: '0',
      HOST: '127.0.0.1',
    }),
    resyncMs: 1_000,
    workerImage: 'registry.example.com/agentplane:test',
    ...overrides,
  };
}

export function runController(cluster: KubeCluster, config: ControllerConfig): Promise<RunningController> {
  return startController(config, cluster.kubeConfig(), pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }));
}

export async function getResource(
  cluster: KubeCluster,
  plural: string,
  name: string,
  namespace = 'default',
): Promise<KubeResource | undefined> {
  const objects = cluster.kubeConfig().makeApiClient(CustomObjectsApi);
  return (
    objects.getNamespacedCustomObject({ group: 'agentplane.io', version: 'v1alpha1', namespace, plural, name }) as Promise<KubeResource>
  ).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

export function condition(resource: KubeResource | undefined, type: string): Condition | undefined {
  return resource?.status?.conditions?.find((c) => c.type === type);
}

/** Waits until the resource's status is for its current generation and satisfies `check`. */
export function resourceSatisfying(
  cluster: KubeCluster,
  plural: string,
  name: string,
  check: (resource: KubeResource) => boolean,
  message: string,
  namespace = 'default',
): Promise<KubeResource> {
  return eventually(
    async () => {
      const resource = await getResource(cluster, plural, name, namespace);
      if (!resource) throw new Error(`${plural}/${name} does not exist`);
      if (resource.status?.observedGeneration !== resource.metadata.generation || !check(resource))
        throw new Error(`${plural}/${name}: ${JSON.stringify(resource.status)}`);
      return resource;
    },
    { timeoutMs: 30_000, intervalMs: 100, message },
  );
}

export function readyResource(cluster: KubeCluster, plural: string, name: string, namespace = 'default'): Promise<KubeResource> {
  return resourceSatisfying(
    cluster,
    plural,
    name,
    (r) => condition(r, 'Ready')?.status === 'True' && Boolean(r.status?.id),
    `${plural}/${name} was not Ready`,
    namespace,
  );
}
