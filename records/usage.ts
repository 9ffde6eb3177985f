/**
 * The usage ledger: one row a model call, charged at the price version in effect and attributed to what it
 * was made for (or a remote agent's task, charged at the cost the agent reported). A call made for a run (its own step, a judge scoring it, or the memory model reading it) takes the run's agent, network
 * (a hop's is its parent's), API key and metadata; a call made while extracting a file takes the file's
 * metadata. Written in the transaction of the work it pays for, so it is counted once; and charged at a time
 * every retry of the charge shares (a step's start, a passage's file's upload), so that the ledger's unique keys,
 * which hold its partitions' day, still hold it to one row.
 */
import type { TokenUsage } from '../models/messages.js';
import { statement, type Queryable } from './db.js';
import { newId } from './ids.js';
import type { PriceApplied } from './run-steps.js';
import { announceThresholds } from './budgets.js';

export type UsageSource = 'run' | 'extraction' | 'judge' | 'memory' | 'a2a';

export interface UsageEntry {
  projectId: string;
  source: UsageSource;
  runId?: string;
  /** The run step the call was (source `run`). */
  stepIndex?: number;
  fileId?: string;
  /** The passage of the file the call read (source `extraction`): a passage is charged once. */
  passageHash?: string;
  model: string;
  provider: string;
  usage: TokenUsage;
  price: PriceApplied;
  /** A cost reported rather than priced (source `a2a`: what the remote agent said its task cost), in USD. */
  cost?: string;
  /** Source `a2a`: the run on the remote side. */
  remoteRunId?: string | null;
}

const INSERT_USAGE = statement(
  'insert_usage',
  `INSERT INTO usage_records (id, project_id, source, run_id, step_index, file_id, agent_id, network_id, api_key_id, model, provider,
       price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, passage_hash, created_at, remote_run_id)
     SELECT $1, $2, $3, $4, $5, $6, r.agent_id, COALESCE(r.network_id, p.network_id), r.api_key_id, $7, $8, $9::text,
       $10::bigint, $11::bigint, $12::bigint,
       COALESCE($17::numeric, usage_cost($10::bigint, $12::bigint, $11::bigint, $13::numeric, $14::numeric, $15::numeric)),
       COALESCE(r.metadata, f.metadata, '{}'), $16, COALESCE(s.started_at, CASE WHEN $16::text IS NOT NULL THEN f.created_at END, now()), $18
     FROM (SELECT 1) one
     LEFT JOIN runs r ON r.id = $4 AND r.project_id = $2
     LEFT JOIN runs p ON p.id = r.parent_run_id
     LEFT JOIN run_steps s ON s.run_id = r.id AND s.index = $5
     LEFT JOIN files f ON f.id = $6 AND f.project_id = $2
     ON CONFLICT DO NOTHING
     RETURNING cost::text AS cost, agent_id, api_key_id`,
);

/**
 * Records a call, and the budget thresholds it crosses; returns its cost as an exact decimal string, or null
 * when the file's passage was charged already.
 */
export async function recordUsage(db: Queryable, entry: UsageEntry): Promise<string | null> {
  const { usage, price } = entry;
  const { rows } = await db.query<{ cost: string; agent_id: string | null; api_key_id: string | null }>(INSERT_USAGE, [
    newId('usage'),
    entry.projectId,
    entry.source,
    entry.runId ?? null,
    entry.stepIndex ?? null,
    entry.fileId ?? null,
    entry.model,
    entry.provider,
    price.version,
    usage.input_tokens,
    usage.output_tokens,
    usage.cached_tokens,
    price.input_per_million,
    price.cached_input_per_million,
    price.output_per_million,
    entry.passageHash ?? null,
    entry.cost ?? null,
    entry.remoteRunId ?? null,
  ]);
  const row = rows[0];
  if (!row) return null;
  await announceThresholds(db, { projectId: entry.projectId, apiKeyId: row.api_key_id, agentIds: row.agent_id ? [row.agent_id] : [] });
  return row.cost;
}
