/**
 * `agentplane controller`: watches Agents, AgentNetworks and the Deployments of worker pools (in the
 * platform's namespace), queues the keys that changed (and every key on each resync, which repairs drift
 * made through the API), and — on the replica that holds the lease — reconciles them a few at a time.
 * SIGTERM stops taking work, lets the passes in flight finish, releases the lease and stops the watches.
 */
import { AppsV1Api, CustomObjectsApi, type KubeConfig, type KubernetesListObject, type V1Deployment } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ControllerConfig } from './config.js';
import { ApiKeySource } from './api-key.js';
import { EventRecorder } from './events.js';
import { startHealthServer } from './health-server.js';
import { ResourceWatch, type WatchedResource } from './informers.js';
import { LeaderElector } from './leader-election.js';
import { ControllerMetrics } from './metrics.js';
import { Platform, PlatformUnavailable } from './platform.js';
import { reconcile, type KindHandler, type OwnedRecord } from './reconciler.js';
import { inSpan } from '../tracing/context.js';
import { agentHandler } from './agents.js';
import { networkHandler } from './networks.js';
import { NETWORK_LABEL, NETWORK_NAMESPACE_LABEL, WorkerPools } from './worker-pools.js';
import { WorkQueue } from './work-queue.js';
import {
  COMPONENT,
  GROUP,
  PLURAL,
  VERSION,
  keyOf,
  splitKey,
  type AgentNetworkResource,
  type AgentResource,
  type Kind,
  type Resource,
} from './resources.js';

const LEASE_NAME = 'agentplane-controller';

function customResource<T extends Resource<unknown>>(kc: KubeConfig, kind: Kind): WatchedResource<T> {
  const objects = kc.makeApiClient(CustomObjectsApi);
  const plural = PLURAL[kind];
  return {
    kind,
    path: (namespace) =>
      namespace ? `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${plural}` : `/apis/${GROUP}/${VERSION}/${plural}`,
    list: async (namespace) =>
      (namespace
        ? await objects.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural })
        : await objects.listClusterCustomObject({ group: GROUP, version: VERSION, plural })) as KubernetesListObject<T>,
  };
}

function workerDeployments(kc: KubeConfig): WatchedResource<V1Deployment> {
  const apps = kc.makeApiClient(AppsV1Api);
  const labelSelector = 'app.kubernetes.io/name=agentplane,app.kubernetes.io/component=network-worker';
  return {
    kind: 'Deployment',
    labelSelector,
    path: (namespace) => (namespace ? `/apis/apps/v1/namespaces/${namespace}/deployments` : '/apis/apps/v1/deployments'),
    list: (namespace) =>
      namespace ? apps.listNamespacedDeployment({ namespace, labelSelector }) : apps.listDeploymentForAllNamespaces({ labelSelector }),
  };
}

export interface RunningController {
  healthUrl: string;
  /** Resolves when it has stopped, after `stop()` or a fatal error. */
  stopped: Promise<void>;
  stop(): Promise<void>;
}

export async function startController(config: ControllerConfig, kc: KubeConfig, log: Logger): Promise<RunningController> {
  const platform = new Platform(config.apiUrl, await ApiKeySource.load(config, kc));
  const metrics = new ControllerMetrics();
  const events = new EventRecorder(kc, COMPONENT, log);
  const pools = new WorkerPools(kc, { namespace: config.workerPoolNamespace, image: config.workerImage, envFrom: config.workerEnvFrom });
  const observe = { restarted: (kind: string) => metrics.watchRestarted(kind), relisted: (kind: string) => metrics.relisted(kind) };
  const agents = new ResourceWatch<AgentResource>(kc, customResource(kc, 'Agent'), config.watchNamespaces, log, observe);
  const networks = new ResourceWatch<AgentNetworkResource>(kc, customResource(kc, 'AgentNetwork'), config.watchNamespaces, log, observe);
  const deployments = new ResourceWatch<V1Deployment>(kc, workerDeployments(kc), [config.workerPoolNamespace], log, observe);

  const handlers: Record<Kind, KindHandler<never, never, OwnedRecord>> = {
    Agent: agentHandler(platform) as unknown as KindHandler<never, never, OwnedRecord>,
    AgentNetwork: networkHandler(platform, (namespace, name) => agents.get(namespace, name), pools) as unknown as KindHandler<
      never,
      never,
      OwnedRecord
    >,
  };
  const caches: Record<Kind, ResourceWatch<Resource<unknown>>> = { Agent: agents, AgentNetwork: networks } as Record<
    Kind,
    ResourceWatch<Resource<unknown>>
  >;

  let queue: WorkQueue | undefined;
  const enqueue = (kind: Kind, key: string) => queue?.add(`${kind}:${key}`);
  const enqueueAll = () => {
    for (const agent of agents.list()) enqueue('Agent', keyOf(agent));
    for (const network of networks.list()) enqueue('AgentNetwork', keyOf(network));
  };
  // A resource's own pass is needed when its spec (generation) changed or it is being deleted; a write of
  // its status or finalizers, the controller's own, needs none (the resync catches anything else).
  const seen = new Map<string, string>();
  const changed = (kind: Kind, resource: Resource<unknown>) => {
    const key = `${kind}:${keyOf(resource)}`;
    const state = `${resource.metadata.uid}/${resource.metadata.generation}/${resource.metadata.deletionTimestamp ? 'deleting' : ''}`;
    if (seen.get(key) === state) return false;
    seen.set(key, state);
    return true;
  };
  agents.onChange((agent) => {
    if (changed('Agent', agent)) enqueue('Agent', keyOf(agent));
    // The networks that name this agent wait on it, or must learn its new id.
    for (const network of networks.list()) {
      if (network.metadata.namespace !== agent.metadata.namespace) continue;
      if (network.spec.members.includes(agent.metadata.name) || network.spec.router.agent === agent.metadata.name)
        enqueue('AgentNetwork', keyOf(network));
    }
  });
  networks.onChange((network) => {
    if (changed('AgentNetwork', network)) enqueue('AgentNetwork', keyOf(network));
  });
  deployments.onChange((deployment) => {
    const labels = deployment.metadata?.labels ?? {};
    const [namespace, name] = [labels[NETWORK_NAMESPACE_LABEL], labels[NETWORK_LABEL]];
    if (namespace && name) enqueue('AgentNetwork', `${namespace}/${name}`);
  });

  const process = async (item: string, work: WorkQueue) => {
    const separator = item.indexOf(':');
    const kind = item.slice(0, separator) as Kind;
    const key = item.slice(separator + 1);
    const { namespace, name } = splitKey(key);
    const resource = caches[kind].get(namespace, name);
    if (!resource) {
      seen.delete(item);
      return work.forget(item); // gone, finalizer done
    }
    const started = performance.now();
    try {
      // A span per pass; the platform requests it makes carry it, so the API's spans join its trace.
      await inSpan(
        `reconcile ${kind}`,
        { attributes: { 'k8s.namespace.name': namespace, 'agentplane.resource.kind': kind, 'agentplane.resource.name': name } },
        () => reconcile({ kc, events, log }, handlers[kind], resource as Resource<never>),
      );
      work.forget(item);
      metrics.reconciled(kind, 'success', (performance.now() - started) / 1000);
    } catch (err) {
      metrics.reconciled(kind, 'error', (performance.now() - started) / 1000);
      const delay = work.retry(item, err instanceof PlatformUnavailable ? err.retryAfterMs : 0);
      const conflict = (err as { code?: number }).code === 409;
      log[conflict ? 'debug' : 'warn'](
        { err: err instanceof Error ? err.message : String(err), kind, key, retry_in_ms: delay },
        'reconcile failed; retrying',
      );
    } finally {
      metrics.queueDepth(work.depth);
    }
  };

  /** Reconciles until `signal` aborts, then lets the passes in flight finish. */
  const lead = async (signal: AbortSignal) => {
    const work = new WorkQueue();
    queue = work;
    enqueueAll();
    const resync = setInterval(enqueueAll, config.resyncMs);
    signal.addEventListener('abort', () => work.shutDown(), { once: true });
    const workers = Array.from({ length: config.workers }, async () => {
      for (let item = await work.next(); item !== undefined; item = await work.next()) {
        await process(item, work);
        work.done(item);
      }
    });
    await Promise.all(workers);
    clearInterval(resync);
    if (queue === work) queue = undefined;
  };

  const stopping = new AbortController();
  const elector = config.leaderElection
    ? new LeaderElector({
        kubeConfig: kc,
        namespace: config.leaseNamespace,
        name: LEASE_NAME,
        identity: config.identity,
        log,
        onChange: (leading) => metrics.leader(leading),
      })
    : undefined;
  const health = await startHealthServer({
    host: config.host,
    port: config.port,
    live: () => true,
    ready: () => agents.synced && networks.synced && deployments.synced,
    metrics,
  });
  // Stopped before the first lists arrived (the API server unreachable): stop waiting for them.
  stopping.signal.addEventListener('abort', () => {
    if (!(agents.synced && networks.synced && deployments.synced)) void Promise.all([agents.stop(), networks.stop(), deployments.stop()]);
  });
  const running = (async () => {
    await Promise.all([agents.start(), networks.start(), deployments.start()]);
    if (stopping.signal.aborted) return;
    log.info(
      { namespaces: config.watchNamespaces.length > 0 ? config.watchNamespaces : 'all', leader_election: config.leaderElection },
      'watches synced',
    );
    if (elector) await elector.run(lead, stopping.signal);
    else {
      metrics.leader(true);
      await lead(stopping.signal);
    }
  })();
  const stopped = running.finally(async () => {
    await Promise.all([agents.stop(), networks.stop(), deployments.stop()]);
    await health.close();
  });
  return {
    healthUrl: health.url,
    stopped,
    async stop() {
      stopping.abort();
      await stopped;
    },
  };
}
