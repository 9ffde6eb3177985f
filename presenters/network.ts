import type { components } from '../api/generated/openapi.js';
import type { NetworkRecord } from '../records/networks.js';
import { unixSeconds } from './time.js';

export type NetworkObject = components['schemas']['Network'];

export function presentNetwork(network: NetworkRecord): NetworkObject {
  return {
    id: network.id,
    object: 'network',
    name: network.name,
    description: network.description,
    members: network.members,
    // Stored only after the request was checked against the same schema.
    router: network.router as NetworkObject['router'],
    max_hops: network.max_hops,
    max_cost_usd: network.max_cost_usd,
    memory: network.memory,
    concurrency: network.concurrency,
    metadata: network.metadata,
    worker_pool: network.worker_pool,
    managed_by: network.managed_resource ? 'kubernetes' : null,
    managed_resource: network.managed_resource,
    version: network.version,
    created_at: unixSeconds(network.created_at),
    updated_at: unixSeconds(network.updated_at),
  };
}

export function presentDeletedNetwork(id: string): components['schemas']['DeletedNetwork'] {
  return { id, object: 'network', deleted: true };
}
