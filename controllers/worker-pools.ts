/**
 * A network's dedicated workers: a Deployment whose workers poll only that network's task queue. It runs in
 * the platform's own namespace, with the operator's worker image and the platform's environment, never in
 * the network's namespace: whoever may create an AgentNetwork chooses neither the code that holds the
 * platform's credentials nor where those credentials are copied. Being in another namespace than the
 * network, it is tied to it by labels (owner references cannot cross namespaces) and deleted with it.
 * Its pod template carries a hash of everything it is made from, so a change of image, resources or
 * environment rolls the pods; it is applied server-side, so fields others manage (an HPA's replicas, say)
 * are left alone.
 */
import { createHash } from 'node:crypto';
import {
  AppsV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Deployment,
  type V1EnvFromSource,
} from '@kubernetes/client-node';
import { FIELD_MANAGER, type AgentNetworkResource } from './resources.js';

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

/** `<namespace>-<name>-workers`, shortened with a hash past 63 characters. */
export function deploymentName(networkNamespace: string, networkName: string): string {
  const name = `${networkNamespace}-${networkName}-workers`;
  if (name.length <= 63) return name;
  const hash = createHash('sha256').update(`${networkNamespace}/${networkName}`).digest('hex').slice(0, 10);
  return `${name.slice(0, 44).replace(/[.-]+$/, '')}-${hash}-workers`;
}

/** The labels that tie a pool's Deployment to its AgentNetwork. */
export const NETWORK_NAMESPACE_LABEL = 'agentplane.io/network-namespace';
export const NETWORK_LABEL = 'agentplane.io/network';
export const NETWORK_UID_LABEL = 'agentplane.io/network-uid';

export interface WorkerPoolSettings {
  /** Where every pool's Deployment runs: the platform's namespace. */
  namespace: string;
  image?: string;
  envFrom: { kind: 'configmap' | 'secret'; name: string }[];
}

export function workerPoolDeployment(network: AgentNetworkResource, settings: WorkerPoolSettings): V1Deployment {
  const pool = network.spec.workerPool!;
  const { namespace, name, uid } = network.metadata;
  const labels = {
    'app.kubernetes.io/name': 'agentplane',
    'app.kubernetes.io/component': 'network-worker',
    [NETWORK_NAMESPACE_LABEL]: namespace,
    [NETWORK_LABEL]: name,
    [NETWORK_UID_LABEL]: uid,
  };
  const envFrom: V1EnvFromSource[] = settings.envFrom.map((source) =>
    source.kind === 'configmap' ? { configMapRef: { name: source.name } } : { secretRef: { name: source.name } },
  );
  const image = settings.image;
  if (!image) throw new Error('worker pools have no image: set AGENTPLANE_WORKER_IMAGE for the controller');
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
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 10001,
        runAsGroup: 10001,
        fsGroup: 10001,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [container],
      volumes: [{ name: 'tmp', emptyDir: {} }],
    },
  };
  const hash = createHash('sha256')
    .update(JSON.stringify({ template, replicas: pool.replicas ?? 1 }))
    .digest('hex')
    .slice(0, 16);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: deploymentName(namespace, name),
      namespace: settings.namespace,
      labels,
      annotations: { [CONFIG_HASH]: hash },
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

  constructor(
    kc: KubeConfig,
    private readonly settings: WorkerPoolSettings,
  ) {
    this.apps = kc.makeApiClient(AppsV1Api);
  }

  /** The Deployment as the spec wants it: applied when the network has a worker pool, deleted when not. */
  async sync(network: AgentNetworkResource): Promise<void> {
    if (!network.spec.workerPool) return this.remove(network);
    const deployment = workerPoolDeployment(network, this.settings);
    await this.apps.patchNamespacedDeployment(
      { namespace: this.settings.namespace, name: deployment.metadata!.name!, body: deployment, fieldManager: FIELD_MANAGER, force: true },
      APPLY_PATCH,
    );
  }

  async remove(network: AgentNetworkResource): Promise<void> {
    const { namespace } = this.settings;
    const name = deploymentName(network.metadata.namespace, network.metadata.name);
    const existing = await this.apps.readNamespacedDeployment({ namespace, name }).catch((err: { code?: number }) => {
      if (err.code === 404) return null;
      throw err;
    });
    if (!existing || existing.metadata?.labels?.[NETWORK_UID_LABEL] !== network.metadata.uid) return;
    await this.apps.deleteNamespacedDeployment({ namespace, name }).catch((err: { code?: number }) => {
      if (err.code !== 404) throw err;
    });
  }
}
