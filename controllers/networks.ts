/**
 * AgentNetwork resources → the platform's networks. Members (and a supervisor's router agent) are Agents of
 * the same namespace, named; the network is built from their platform ids once every one of them is Ready.
 * A member's id is the record the platform holds for that Agent's uid, never its `status.id`, which anyone
 * who may write the Agent's status could point at another agent.
 */
import type { Platform, Network, NetworkBody } from './platform.js';
import { differsFrom, type Blocked, type KindHandler } from './reconciler.js';
import { isReady, type AgentNetworkResource, type AgentNetworkSpec, type AgentResource } from './resources.js';
import { syncSchedules } from './schedules.js';
import { workerPoolQueue, type WorkerPools } from './worker-pools.js';

type Body = Omit<NetworkBody, 'managed_by' | 'managed_resource'>;

/** The Agent of this namespace and name, from the controller's cache. */
export type AgentLookup = (namespace: string, name: string) => AgentResource | undefined;

/** The platform's agent made for the Agent of this uid, or null. */
export type AgentRecordLookup = (uid: string) => Promise<{ id: string } | null>;

/** The platform id of each named Agent, in order, or why the network must wait. */
async function agentIds(
  lookup: AgentLookup,
  records: AgentRecordLookup,
  namespace: string,
  names: string[],
  role: (name: string) => string,
): Promise<string[] | Blocked> {
  const ids: string[] = [];
  for (const name of names) {
    const agent = lookup(namespace, name);
    if (!agent) return { reason: 'MemberNotFound', message: `${role(name)}: there is no Agent ${namespace}/${name}.` };
    const notReady: Blocked = { reason: 'MemberNotReady', message: `${role(name)}: the Agent ${namespace}/${name} is not Ready.` };
    if (!isReady(agent) || agent.metadata.deletionTimestamp) return notReady;
    const record = await records(agent.metadata.uid);
    if (!record) return notReady;
    ids.push(record.id);
  }
  return ids;
}

export async function networkBody(
  resource: AgentNetworkResource,
  lookup: AgentLookup,
  records: AgentRecordLookup,
): Promise<Body | Blocked> {
  const { namespace, name } = resource.metadata;
  const spec: AgentNetworkSpec = resource.spec;
  const members = await agentIds(lookup, records, namespace, spec.members, (member) => `member ${member}`);
  if (!Array.isArray(members)) return members;
  let router: Body['router'];
  if (spec.router.type !== 'supervisor') router = { type: spec.router.type };
  else if (spec.router.agent) {
    const ids = await agentIds(lookup, records, namespace, [spec.router.agent], (agent) => `router agent ${agent}`);
    if (!Array.isArray(ids)) return ids;
    router = { type: 'supervisor', agent_id: ids[0]! };
  } else {
    router = { type: 'supervisor', instructions: spec.router.instructions!, ...(spec.router.model ? { model: spec.router.model } : {}) };
  }
  return {
    name,
    description: spec.description ?? '',
    members,
    router,
    max_hops: spec.maxHops ?? 10,
    concurrency: spec.concurrency ?? 'allow',
    metadata: spec.metadata ?? {},
    worker_pool: spec.workerPool ? workerPoolQueue(namespace, name) : null,
    max_cost_usd: spec.maxCostUsd ?? null,
    memory: { enabled: spec.memory?.enabled ?? false },
  };
}

export function networkHandler(platform: Platform, lookup: AgentLookup, pools: WorkerPools): KindHandler<AgentNetworkSpec, Body, Network> {
  return {
    kind: 'AgentNetwork',
    desired: (resource: AgentNetworkResource) => networkBody(resource, lookup, (uid) => platform.findAgent(uid)),
    get: (id) => platform.getNetwork(id),
    findByUid: (uid) => platform.findNetwork(uid),
    create: (body, managed) => platform.createNetwork({ ...body, managed_by: 'kubernetes', managed_resource: managed }),
    update: (id, body) => platform.updateNetwork(id, body),
    differs: differsFrom,
    delete: (id) => platform.deleteNetwork(id),
    afterSync: (resource: AgentNetworkResource) => pools.sync(resource),
    beforeRemoval: (resource: AgentNetworkResource) => pools.remove(resource),
    syncDependents: (resource: AgentNetworkResource, record) => syncSchedules(platform, 'AgentNetwork', resource, record.id),
  };
}
