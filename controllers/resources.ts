/**
 * The Agent and AgentNetwork resources as the controller reads them, and their status. Their spec and status
 * types are generated from the CRDs' schemas (crds/*.yaml → controllers/generated/crds.ts, `npm run generate`).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { components } from './generated/crds.js';

export const GROUP = 'agentplane.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const FINALIZER = 'agentplane.io/platform-record';
export const FIELD_MANAGER = 'agentplane-controller';
export const COMPONENT = 'agentplane-controller';

type Schemas = components['schemas'];
type GeneratedCondition = NonNullable<Schemas['AgentStatus']['conditions']>[number];

/** A status condition; the CRDs admit any type, the controller writes these two. */
export interface Condition extends Omit<GeneratedCondition, 'type'> {
  type: 'Accepted' | 'Ready';
}

/** Agents and AgentNetworks share the shape of their status. */
export interface ResourceStatus extends Omit<Schemas['AgentStatus'] & Schemas['AgentNetworkStatus'], 'conditions'> {
  conditions?: Condition[];
}

export type AgentSpec = Schemas['AgentSpec'];
export type AgentToolSpec = NonNullable<AgentSpec['tools']>[number];
export type AgentNetworkSpec = Schemas['AgentNetworkSpec'];

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
export function withConditions(
  previous: ResourceStatus | undefined,
  next: Omit<ResourceStatus, 'conditions'>,
  conditions: Omit<Condition, 'lastTransitionTime'>[],
  now = new Date(),
): ResourceStatus {
  const merged = conditions.map((condition) => {
    const before = previous?.conditions?.find((c) => c.type === condition.type);
    const lastTransitionTime =
      before && before.status === condition.status ? before.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
    return { ...condition, message: condition.message.slice(0, 32_000), lastTransitionTime };
  });
  return { ...next, conditions: merged };
}
