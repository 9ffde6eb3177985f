/** Agent records and their versions: an update writes a new version; runs read the version they started with. */
import type { components } from '../api/generated/openapi.js';
import { newId } from './ids.js';
import { statement, type Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import { managedConditions, type ManagedFilter, type ManagedResource } from './managed-resources.js';

export type AgentTool = components['schemas']['AgentTool'];
export type Concurrency = components['schemas']['Concurrency'];
export type AgentModelSettings = components['schemas']['ModelSettings'];
export type MemorySettings = components['schemas']['MemorySettings'];

/** What a version of an agent is: everything a run needs to know about it. */
export interface AgentDefinition {
  name: string;
  description: string | null;
  model: string;
  instructions: string;
  tools: AgentTool[];
  model_settings: AgentModelSettings;
  concurrency: Concurrency;
  max_steps: number;
  /** How long a tool call waits for a decision before it expires (a rejection). */
  approval_timeout_seconds: number;
  /** The cap on each of its runs' cost, decimal USD; null for none. */
  max_cost_usd: string | null;
  /** Whether its runs for a subject on a thread keep memories of it, and are given them. */
  memory: MemorySettings;
  metadata: Record<string, string>;
}

export interface AgentRecord extends AgentDefinition {
  id: string;
  project_id: string;
  managed_resource: ManagedResource | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export const DEFAULT_MAX_STEPS = 10;
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 7 * 86_400;

const DEFINITION_COLUMNS =
  'v.name, v.description, v.model, v.instructions, v.tools, v.model_settings, v.concurrency, v.max_steps, v.approval_timeout_seconds, trim_scale(v.max_cost_usd)::text AS max_cost_usd, v.memory, v.metadata';
const COLUMNS = `a.id, a.project_id, a.managed_resource, a.version, a.created_at, a.updated_at, ${DEFINITION_COLUMNS}`;
const CURRENT = 'agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version';

export function newAgentId(): string {
  return newId('agent');
}

async function insertVersion(tx: Queryable, agentId: string, version: number, d: AgentDefinition): Promise<void> {
  await tx.query(
    `INSERT INTO agent_versions (agent_id, version, name, description, model, instructions, tools, model_settings, concurrency, max_steps, approval_timeout_seconds, metadata, max_cost_usd, memory)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::numeric, $14)`,
    [
      agentId,
      version,
      d.name,
      d.description,
      d.model,
      d.instructions,
      JSON.stringify(d.tools),
      d.model_settings,
      d.concurrency,
      d.max_steps,
      d.approval_timeout_seconds,
      d.metadata,
      d.max_cost_usd,
      d.memory,
    ],
  );
}

export async function insertAgent(
  tx: Queryable,
  projectId: string,
  definition: AgentDefinition,
  managedResource: ManagedResource | null = null,
): Promise<AgentRecord> {
  const id = newAgentId();
  await tx.query('INSERT INTO agents (id, project_id, managed_resource) VALUES ($1, $2, $3)', [id, projectId, managedResource]);
  await insertVersion(tx, id, 1, definition);
  return (await findAgent(tx, projectId, id))!;
}

const FIND_AGENT_TEXT = `SELECT ${COLUMNS} FROM ${CURRENT} WHERE a.id = $1 AND a.project_id = $2 AND a.deleted_at IS NULL`;
const FIND_AGENT = statement('find_agent', FIND_AGENT_TEXT);
const LOCK_AGENT = statement('lock_agent', 'SELECT 1 FROM agents WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL FOR UPDATE');

/**
 * Holds the agent until the transaction ends, as what is written for it (a schedule) is: its deletion, which deletes
 * those too, waits for them, or has been written and is seen. False when the agent is gone.
 */
export async function holdAgent(tx: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await tx.query('SELECT 1 FROM agents WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL FOR SHARE', [
    id,
    projectId,
  ]);
  return rowCount === 1;
}

export async function findAgent(
  db: Queryable,
  projectId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<AgentRecord | null> {
  // Locked, then read. A read that locked through its join to the current version would, had it waited for a
  // change, check the changed row against the version it joined before, find it no longer current, and answer
  // that there is no agent: PostgreSQL re-reads only the locked row.
  if (options.lock) await db.query(LOCK_AGENT, [id, projectId]);
  const { rows } = await db.query<AgentRecord>(FIND_AGENT, [id, projectId]);
  return rows[0] ?? null;
}

/** A version as it was defined, whether or not the agent has since changed or been deleted. */
export async function findAgentVersion(db: Queryable, agentId: string, version: number): Promise<AgentDefinition | null> {
  const { rows } = await db.query<AgentDefinition>(
    `SELECT ${DEFINITION_COLUMNS} FROM agent_versions v WHERE v.agent_id = $1 AND v.version = $2`,
    [agentId, version],
  );
  return rows[0] ?? null;
}

/** Writes the next version of `current`, which the caller read under its lock (findAgent), with `changes` applied. */
export async function updateAgent(tx: Queryable, current: AgentRecord, changes: Partial<AgentDefinition>): Promise<AgentRecord> {
  const version = current.version + 1;
  // The version is written from the definition's fields alone; the record's others are not read.
  await insertVersion(tx, current.id, version, { ...current, ...changes });
  await tx.query('UPDATE agents SET version = $2, updated_at = now() WHERE id = $1', [current.id, version]);
  return (await findAgent(tx, current.project_id, current.id))!;
}

export async function deleteAgent(tx: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await tx.query('UPDATE agents SET deleted_at = now() WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL', [
    id,
    projectId,
  ]);
  return rowCount === 1;
}

export async function listAgents(
  db: Queryable,
  projectId: string,
  page: PageRequest,
  filter: ManagedFilter = {},
): Promise<Page<AgentRecord>> {
  return selectPage<AgentRecord>(db, {
    table: 'agents',
    from: `${CURRENT}`,
    alias: 'a',
    columns: COLUMNS,
    projectId,
    conditions: [['a.deleted_at IS NULL'], ...managedConditions('a', filter)],
    page,
  });
}
