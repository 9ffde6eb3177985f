/** The Agent and AgentNetwork resources as the controller reads them (crds/ holds their schemas), and their status. */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { components } from '../api/generated/openapi.js';

export const GROUP = 'agentplane.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const FINALIZER = 'agentplane.io/platform-record';
export const FIELD_MANAGER = 'agentplane-controller';
export const COMPONENT = 'agentplane-controller';

export interface Condition {
  type: 'Accepted' | 'Ready';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export interface ResourceStatus {
  id?: string;
  observedGeneration?: number;
  conditions?: Condition[];
}

export interface AgentToolSpec {
  type: 'http' | 'mcp';
  name?: string;
  description?: string;
  url?: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  parameters?: Record<string, unknown>;
  timeoutMs?: number;
  maxResponseBytes?: number;
  serverLabel?: string;
  serverUrl?: string;
  allowedTools?: string[];
}

export interface AgentSpec {
  model: string;
  instructions?: string;
  description?: string;
  tools?: AgentToolSpec[];
  modelSettings?: { temperature?: number; topP?: number; maxOutputTokens?: number };
  concurrency?: 'allow' | 'reject' | 'enqueue' | 'interrupt';
  maxSteps?: number;
  metadata?: Record<string, string>;
}

export interface AgentNetworkSpec {
  members: string[];
  /** The CRD's router types are the API's (test/unit/router-types.test.ts checks that they agree). */
  router: { type: components['schemas']['NetworkRouter']['type']; agent?: string; instructions?: string; model?: string };
  maxHops?: number;
  concurrency?: 'allow' | 'reject' | 'enqueue' | 'interrupt';
  description?: string;
  metadata?: Record<string, string>;
  workerPool?: {
    replicas?: number;
    resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
  };
}

export interface Resource<Spec> extends KubernetesObject {
  metadata: NonNullable<KubernetesObject['metadata']> & { name: string; namespace: string; uid: string };
  spec: Spec;
  status?: ResourceStatus;
}

export type AgentResource = Resource<AgentSpec>;
export type AgentNetworkResource = Resource<AgentNetworkSpec>;

export type Kind = 'Agent' | 'AgentNetwork';
export const PLURAL: Record<Kind, string> = { Agent: 'agents', AgentNetwork: 'agentnetworks' };

export function keyOf(object: { metadata?: { namespace?: string; name?: string } }): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const [namespace = '', name = ''] = key.split('/');
  return { namespace, name };
}

/** Whether the resource's Ready condition is True for its current generation. */
export function isReady(resource: Resource<unknown>): boolean {
  const ready = resource.status?.conditions?.find((c) => c.type === 'Ready');
  return ready?.status === 'True' && resource.status?.observedGeneration === resource.metadata.generation && Boolean(resource.status?.id);
}

/**
 * The status with these conditions set: a condition keeps its lastTransitionTime unless its status changes,
 * so an unchanged outcome writes an identical status (and the controller then writes nothing).
 */
export function withConditions(previous: ResourceStatus | undefined, next: Omit<ResourceStatus, 'conditions'>, conditions: Omit<Condition, 'lastTransitionTime'>[], now = new Date()): ResourceStatus {
  const merged = conditions.map((condition) => {
    const before = previous?.conditions?.find((c) => c.type === condition.type);
    const lastTransitionTime = before && before.status === condition.status ? before.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
    return { ...condition, message: condition.message.slice(0, 32_000), lastTransitionTime };
  });
  return { ...next, conditions: merged };
}
