/**
 * A network's dedicated workers: a Deployment owned by the AgentNetwork, whose workers poll only that
 * network's task queue. Its pod template carries a hash of everything it is made from, so a change of
 * image, replicas' resources or environment rolls the pods; it is applied server-side, so fields others
 * manage (an HPA's replicas, say) are left alone.
 */
import { createHash } from 'node:crypto';
import { AppsV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Deployment, type V1EnvFromSource } from '@kubernetes/client-node';
import { API_VERSION, FIELD_MANAGER, type AgentNetworkResource } from './resources.js';

export const CONFIG_HASH = 'agentplane.io/config-hash';
const PROBE_PORT = 8081;
const APPLY_PATCH = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/** The task queue of a network's worker pool: `network.<namespace>.<name>`, shortened with a hash past 100 characters. */
export function workerPoolQueue(namespace: string, name: string): string {
  const queue = `network.${namespace}.${name}`;
  if (queue.length <= 100) return queue;
  const hash = createHash('sha256').update(queue).digest('hex').slice(0, 10);
  return `${queue.slice(0, 89).replace(/[.-]+$/, '')}-${hash}`;
}

export function deploymentName(networkName: string): string {
  const name = `${networkName}-workers`;
  if (name.length <= 63) return name;
  const hash = createHash('sha256').update(networkName).digest('hex').slice(0, 8);
  return `${networkName.slice(0, 45).replace(/[.-]+$/, '')}-${hash}-workers`;
}

export interface WorkerPoolSettings {
  image?: string;
  envFrom: { kind: 'configmap' | 'secret'; name: string }[];
}

export function workerPoolDeployment(network: AgentNetworkResource, settings: WorkerPoolSettings): V1Deployment {
  const pool = network.spec.workerPool!;
  const { namespace, name, uid } = network.metadata;
  const labels = { 'app.kubernetes.io/name': 'agentplane', 'app.kubernetes.io/component': 'network-worker', 'agentplane.io/network': name };
  const envFrom: V1EnvFromSource[] = settings.envFrom.map((source) => (source.kind === 'configmap' ? { configMapRef: { name: source.name } } : { secretRef: { name: source.name } }));
  const image = pool.image ?? settings.image;
  if (!image) throw new Error('the worker pool has no image: set spec.workerPool.image, or AGENTPLANE_WORKER_IMAGE for the controller');
  const container = {
    name: 'worker',
    image,
    args: ['worker'],
    env: [
      { name: 'AGENTPLANE_TASK_QUEUE', value: workerPoolQueue(namespace, name) },
      { name: 'AGENTPLANE_PROBE_PORT', value: String(PROBE_PORT) },
    ],
    ports: [{ name: 'probes', containerPort: PROBE_PORT }],
    livenessProbe: { httpGet: { path: '/healthz', port: 'probes' }, periodSeconds: 10 },
    readinessProbe: { httpGet: { path: '/readyz', port: 'probes' }, periodSeconds: 5 },
    envFrom,
    resources: { requests: quantities(pool.resources?.requests), limits: quantities(pool.resources?.limits) },
    securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } },
    volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
  };
  const template = {
    metadata: { labels },
    spec: {
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [container],
      volumes: [{ name: 'tmp', emptyDir: {} }],
    },
  };
  const hash = createHash('sha256').update(JSON.stringify({ template, replicas: pool.replicas ?? 1 })).digest('hex').slice(0, 16);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: deploymentName(name),
      namespace,
      labels,
      annotations: { [CONFIG_HASH]: hash },
      ownerReferences: [{ apiVersion: API_VERSION, kind: 'AgentNetwork', name, uid, controller: true }],
    },
    spec: {
      replicas: pool.replicas ?? 1,
      selector: { matchLabels: labels },
      template: { ...template, metadata: { labels, annotations: { [CONFIG_HASH]: hash } } },
    },
  };
}

/** Quantities as strings, as the typed client wants them (the CRD lets `cpu: 1` through as a number). */
function quantities(values: Record<string, string | number> | undefined): Record<string, string> | undefined {
  return values && Object.fromEntries(Object.entries(values).map(([name, value]) => [name, String(value)]));
}

export class WorkerPools {
  private readonly apps: AppsV1Api;

  constructor(kc: KubeConfig, private readonly settings: WorkerPoolSettings) {
    this.apps = kc.makeApiClient(AppsV1Api);
  }

  /** The Deployment as the spec wants it: applied when the network has a worker pool, deleted when not. */
  async sync(network: AgentNetworkResource): Promise<void> {
    if (!network.spec.workerPool) return this.remove(network);
    const deployment = workerPoolDeployment(network, this.settings);
    await this.apps.patchNamespacedDeployment(
      { namespace: network.metadata.namespace, name: deployment.metadata!.name!, body: deployment, fieldManager: FIELD_MANAGER, force: true },
      APPLY_PATCH,
    );
  }

  async remove(network: AgentNetworkResource): Promise<void> {
    const name = deploymentName(network.metadata.name);
    const existing = await this.apps.readNamespacedDeployment({ namespace: network.metadata.namespace, name }).catch((err: { code?: number }) => {
      if (err.code === 404) return null;
      throw err;
    });
    if (!existing || !existing.metadata?.ownerReferences?.some((o) => o.uid === network.metadata.uid)) return;
    await this.apps.deleteNamespacedDeployment({ namespace: network.metadata.namespace, name }).catch((err: { code?: number }) => {
      if (err.code !== 404) throw err;
    });
  }
}
