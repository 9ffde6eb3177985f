/**
 * Records a Kubernetes resource manages: the controller creates them with the resource's identity, and the
 * API refuses changes that do not come from it, so the resource stays the one source of truth.
 */
import type { components } from '../api/generated/openapi.js';

export type ManagedResource = components['schemas']['ManagedResource'];

/** `managed_by` and `managed_uid`, as a list filters them. */
export interface ManagedFilter {
  managedBy?: 'kubernetes' | 'none';
  managedUid?: string;
}

/** Conditions on `<alias>.managed_resource` for selectPage. */
export function managedConditions(alias: string, filter: ManagedFilter): [sql: string, ...values: unknown[]][] {
  const conditions: [string, ...unknown[]][] = [];
  if (filter.managedBy === 'kubernetes') conditions.push([`${alias}.managed_resource IS NOT NULL`]);
  if (filter.managedBy === 'none') conditions.push([`${alias}.managed_resource IS NULL`]);
  if (filter.managedUid !== undefined) conditions.push([`${alias}.managed_resource->>'uid' = ?`, filter.managedUid]);
  return conditions;
}

/** The unique index that keeps one live record per managed resource, by the name PostgreSQL reports. */
export function isManagedUidConflict(err: unknown): boolean {
  const { code, constraint } = err as { code?: string; constraint?: string };
  return code === '23505' && (constraint === 'agents_managed_uid' || constraint === 'networks_managed_uid');
}
