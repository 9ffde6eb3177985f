/** Network records and their versions, as agents: an update writes a new version; runs keep the one they started with. */
import type { MemorySettings } from './agents.js';
import type { components } from '../api/generated/openapi.js';
import { newId } from './ids.js';
import type { Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import type { Concurrency } from './agents.js';
import { managedConditions, type ManagedFilter, type ManagedResource } from './managed-resources.js';

/** The router types: `sequential`, `supervisor`, `handoff`, as the API document lists them. */
export type NetworkRouterType = components['schemas']['NetworkRouter']['type'];

/** A router as stored: one of the document's NetworkRouter branches, read with every field optional. */
export interface NetworkRouter {
  type: NetworkRouterType;
  agent_id?: string;
  instructions?: string;
  model?: string;
}

export interface NetworkDefinition {
  name: string;
  description: string | null;
  members: string[];
  router: NetworkRouter;
  max_hops: number;
  concurrency: Concurrency;
  metadata: Record<string, string>;
  /** The task queue of the network's dedicated workers; null: the shared workers run it. */
  worker_pool: string | null;
  /** The cap on each of its runs' cost, hops included, decimal USD; null for none. */
  max_cost_usd: string | null;
  /** Whether its runs for a subject on a thread keep memories of it, and its hops are given them. */
  memory: MemorySettings;
}

export interface NetworkRecord extends NetworkDefinition {
  id: string;
  project_id: string;
  managed_resource: ManagedResource | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export const DEFAULT_MAX_HOPS = 10;

const DEFINITION_COLUMNS =
  'v.name, v.description, v.members, v.router, v.max_hops, v.concurrency, v.metadata, v.worker_pool, trim_scale(v.max_cost_usd)::text AS max_cost_usd, v.memory';
const COLUMNS = `n.id, n.project_id, n.managed_resource, n.version, n.created_at, n.updated_at, ${DEFINITION_COLUMNS}`;
const CURRENT = 'networks n JOIN network_versions v ON v.network_id = n.id AND v.version = n.version';

async function insertVersion(tx: Queryable, networkId: string, version: number, d: NetworkDefinition): Promise<void> {
  await tx.query(
    `INSERT INTO network_versions (network_id, version, name, description, members, router, max_hops, concurrency, metadata, worker_pool, max_cost_usd, memory)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::numeric, $12)`,
    [
      networkId,
      version,
      d.name,
      d.description,
      d.members,
      d.router,
      d.max_hops,
      d.concurrency,
      d.metadata,
      d.worker_pool,
      d.max_cost_usd,
      d.memory,
    ],
  );
}

export async function insertNetwork(
  tx: Queryable,
  projectId: string,
  definition: NetworkDefinition,
  managedResource: ManagedResource | null = null,
): Promise<NetworkRecord> {
  const id = newId('net');
  await tx.query('INSERT INTO networks (id, project_id, managed_resource) VALUES ($1, $2, $3)', [id, projectId, managedResource]);
  await insertVersion(tx, id, 1, definition);
  return (await findNetwork(tx, projectId, id))!;
}

/** Holds the network until the transaction ends, as holdAgent holds an agent. False when the network is gone. */
export async function holdNetwork(tx: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await tx.query('SELECT 1 FROM networks WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL FOR SHARE', [
    id,
    projectId,
  ]);
  return rowCount === 1;
}

export async function findNetwork(
  db: Queryable,
  projectId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<NetworkRecord | null> {
  // Locked, then read, as an agent is (records/agents.ts, findAgent).
  if (options.lock)
    await db.query('SELECT 1 FROM networks WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL FOR UPDATE', [id, projectId]);
  const { rows } = await db.query<NetworkRecord>(
    `SELECT ${COLUMNS} FROM ${CURRENT} WHERE n.id = $1 AND n.project_id = $2 AND n.deleted_at IS NULL`,
    [id, projectId],
  );
  return rows[0] ?? null;
}

export async function findNetworkVersion(db: Queryable, networkId: string, version: number): Promise<NetworkDefinition | null> {
  const { rows } = await db.query<NetworkDefinition>(
    `SELECT ${DEFINITION_COLUMNS} FROM network_versions v WHERE v.network_id = $1 AND v.version = $2`,
    [networkId, version],
  );
  return rows[0] ?? null;
}

/** Writes the next version of `current`, which the caller read under its lock (findNetwork), with `changes` applied. */
export async function updateNetwork(tx: Queryable, current: NetworkRecord, changes: Partial<NetworkDefinition>): Promise<NetworkRecord> {
  const version = current.version + 1;
  // The version is written from the definition's fields alone; the record's others are not read.
  await insertVersion(tx, current.id, version, { ...current, ...changes });
  await tx.query('UPDATE networks SET version = $2, updated_at = now() WHERE id = $1', [current.id, version]);
  return (await findNetwork(tx, current.project_id, current.id))!;
}

export async function deleteNetwork(tx: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await tx.query('UPDATE networks SET deleted_at = now() WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL', [
    id,
    projectId,
  ]);
  return rowCount === 1;
}

export async function listNetworks(
  db: Queryable,
  projectId: string,
  page: PageRequest,
  filter: ManagedFilter = {},
): Promise<Page<NetworkRecord>> {
  const conditions: [string, ...unknown[]][] = [['n.deleted_at IS NULL'], ...managedConditions('n', filter)];
  return selectPage<NetworkRecord>(db, { table: 'networks', from: CURRENT, alias: 'n', columns: COLUMNS, projectId, conditions, page });
}

/** Which of `agentIds` are not live agents of the project (unknown, another project's, or deleted). */
export async function missingAgents(db: Queryable, projectId: string, agentIds: string[]): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM agents WHERE project_id = $1 AND id = ANY($2) AND deleted_at IS NULL', [
    projectId,
    agentIds,
  ]);
  return agentIds.filter((id) => !rows.some((r) => r.id === id));
}
