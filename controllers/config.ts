/** The controller's settings, all from the environment, and the kubeconfig it reads at start. */
import { hostname } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';

/** A setting that is missing or wrong; the message names the variable. */
export class ControllerConfigError extends Error {}

export interface ControllerConfig {
  apiUrl: string;
  apiKey?: string;
  apiKeySecret?: { namespace: string; name: string };
  /** Empty: every namespace. */
  watchNamespaces: string[];
  leaderElection: boolean;
  leaseNamespace: string;
  identity: string;
  /** Where worker pools' Deployments run: the platform's own namespace, never a network's. */
  workerPoolNamespace: string;
  workerImage?: string;
  /** ConfigMaps and Secrets whose keys become the environment of worker-pool workers. */
  workerEnvFrom: { kind: 'configmap' | 'secret'; name: string }[];
  resyncMs: number;
  /** Reconciles running at once. */
  workers: number;
  /** AGENTPLANE_PROBE_PORT (PORT, its earlier name, still works): /healthz, /readyz and /metrics. */
  port: number;
  host: string;
  logLevel: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function controllerConfigFrom(env: NodeJS.ProcessEnv): ControllerConfig {
  const apiUrl = env.AGENTPLANE_API_URL;
  if (!apiUrl)
    throw new ControllerConfigError('Missing configuration: set AGENTPLANE_API_URL to the platform API, e.g. http://agentplane-api:8080.');
  if (!URL.canParse(apiUrl) || !/^https?:$/.test(new URL(apiUrl).protocol)) {
    throw new ControllerConfigError(`AGENTPLANE_API_URL must be an http or https URL, not '${apiUrl}'.`);
  }
  let apiKeySecret: ControllerConfig['apiKeySecret'];
  if (env.AGENTPLANE_API_KEY_SECRET) {
    const [namespace, name, ...rest] = env.AGENTPLANE_API_KEY_SECRET.split('/');
    if (!namespace || !name || rest.length > 0 || !DNS_LABEL.test(namespace)) {
      throw new ControllerConfigError(`AGENTPLANE_API_KEY_SECRET must be namespace/name, not '${env.AGENTPLANE_API_KEY_SECRET}'.`);
    }
    apiKeySecret = { namespace, name };
  }
  if (!env.AGENTPLANE_API_KEY && !apiKeySecret) {
    throw new ControllerConfigError(
      'Missing configuration: set AGENTPLANE_API_KEY, or AGENTPLANE_API_KEY_SECRET (namespace/name of a Secret with the key in `api-key`).',
    );
  }
  const watchNamespaces = (env.AGENTPLANE_WATCH_NAMESPACES ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const badNamespace = watchNamespaces.find((n) => !DNS_LABEL.test(n));
  if (badNamespace !== undefined)
    throw new ControllerConfigError(`AGENTPLANE_WATCH_NAMESPACES lists '${badNamespace}', which is not a namespace name.`);
  const leaderElection = booleanOf(env, 'AGENTPLANE_LEADER_ELECTION', true);
  const workerEnvFrom = (env.AGENTPLANE_WORKER_ENV_FROM ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((source) => {
      const [kind, name] = source.split(':');
      if ((kind !== 'configmap' && kind !== 'secret') || !name || !DNS_LABEL.test(name)) {
        throw new ControllerConfigError(
          `AGENTPLANE_WORKER_ENV_FROM takes configmap:NAME and secret:NAME, comma-separated, not '${source}'.`,
        );
      }
      return { kind, name } as const;
    });
  return {
    apiUrl: apiUrl.replace(/\/+$/, ''),
    apiKey: env.AGENTPLANE_API_KEY || undefined,
    apiKeySecret,
    watchNamespaces,
    leaderElection,
    leaseNamespace: env.AGENTPLANE_LEADER_ELECTION_NAMESPACE || env.POD_NAMESPACE || 'default',
    identity: env.POD_NAME || `${hostname()}-${process.pid}`,
    workerPoolNamespace: namespaceOf(env, 'AGENTPLANE_WORKER_POOL_NAMESPACE') ?? env.POD_NAMESPACE ?? 'default',
    workerImage: env.AGENTPLANE_WORKER_IMAGE || undefined,
    workerEnvFrom,
    resyncMs: wholeNumber(env, 'AGENTPLANE_RESYNC_SECONDS', 30, 1, 86_400) * 1000,
    workers: wholeNumber(env, 'AGENTPLANE_CONTROLLER_WORKERS', 8, 1, 64),
    port: wholeNumber(env, env.AGENTPLANE_PROBE_PORT || !env.PORT ? 'AGENTPLANE_PROBE_PORT' : 'PORT', 8081, 0, 65_535),
    host: env.HOST || '0.0.0.0',
    logLevel: env.LOG_LEVEL ?? 'info',
  };
}

function namespaceOf(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  if (!value) return undefined;
  if (!DNS_LABEL.test(value)) throw new ControllerConfigError(`${name} must be a namespace name, not '${value}'.`);
  return value;
}

function booleanOf(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  if (value !== 'true' && value !== 'false') throw new ControllerConfigError(`${name} must be true or false, not '${value}'.`);
  return value === 'true';
}

function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max)
    throw new ControllerConfigError(`${name} must be a whole number from ${min} to ${max}, not '${text}'.`);
  return value;
}

/** KUBECONFIG when set (a file), else the pod's own service account. */
export function loadKubeConfig(env: NodeJS.ProcessEnv): KubeConfig {
  const kc = new KubeConfig();
  if (env.KUBECONFIG) kc.loadFromFile(env.KUBECONFIG);
  else if (env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else throw new ControllerConfigError('Missing configuration: set KUBECONFIG, or run the controller in a pod (in-cluster configuration).');
  return kc;
}
