/**
 * Budgets: a spend limit on a project, an API key or an agent, per UTC day or month. What was spent is read
 * from the usage ledger (its hourly rollups) for the current period, so it is exact and never drifts. Each
 * threshold is announced once per period, by the transaction that records the usage crossing it.
 */
import { newId } from './ids.js';
import { statement, type Queryable } from './db.js';
import { recordEvent } from './events.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';

export type BudgetScopeType = 'project' | 'api_key' | 'agent';
export type BudgetPeriod = 'day' | 'month';

export interface BudgetRecord {
  id: string;
  project_id: string;
  name: string | null;
  scope_type: BudgetScopeType;
  scope_id: string;
  period: BudgetPeriod;
  /** Exact decimal strings. */
  limit_usd: string;
  thresholds: string[];
  created_at: Date;
  updated_at: Date;
  /** What was spent in the current period, and its bounds (UTC). */
  spent_usd: string;
  period_start: Date;
  period_end: Date;
}

/** The current period of `b` (a budgets row): its start and end, in UTC. */
const PERIOD = (b: string) => `(date_trunc(${b}.period, now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;
const PERIOD_END = (b: string) =>
  `((date_trunc(${b}.period, now() AT TIME ZONE 'UTC') + ('1 ' || ${b}.period)::interval) AT TIME ZONE 'UTC')`;

/**
 * What a budget `b` counts in its current period. Periods start on whole UTC hours, so the ledger's hourly
 * rollups give the exact sum, reading hours rather than calls.
 */
export const SPENT = (b: string) => `(
  SELECT coalesce(sum(u.cost), 0) FROM usage_rollups u
  WHERE u.hour >= ${PERIOD(b)} AND u.hour < ${PERIOD_END(b)} AND ${COUNTS_FOR(b, 'u')}
)`;

/** Whether a row `x` with a project, key and agent (a ledger row, a reservation) counts for budget `b`. */
export const COUNTS_FOR = (b: string, x: string) =>
  `${x}.project_id = ${b}.project_id
    AND CASE ${b}.scope_type WHEN 'api_key' THEN ${x}.api_key_id = ${b}.scope_id WHEN 'agent' THEN ${x}.agent_id = ${b}.scope_id ELSE true END`;

const COLUMNS = `b.id, b.project_id, b.name, b.scope_type, b.scope_id, b.period, trim_scale(b.limit_usd)::text AS limit_usd,
  b.thresholds::text[] AS thresholds, b.created_at, b.updated_at,
  trim_scale(${SPENT('b')})::text AS spent_usd, ${PERIOD('b')} AS period_start, ${PERIOD_END('b')} AS period_end`;

export interface NewBudget {
  name: string | null;
  scopeType: BudgetScopeType;
  scopeId: string;
  period: BudgetPeriod;
  limitUsd: string;
  thresholds: string[];
}

/**
 * The most budgets a project holds. Each model call of a run sums the period's spend of every budget that applies
 * to it, in the PostgreSQL every project shares, and holds a lock on each while it does.
 */
export const MAX_BUDGETS_PER_PROJECT = 100;

/** How many budgets the project holds, counted under the project's budgets lock, so that two creations count each other. */
export async function countBudgetsHeld(tx: Queryable, projectId: string): Promise<number> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('budgets:' || $1))`, [projectId]);
  const { rows } = await tx.query<{ count: number }>('SELECT count(*)::int AS count FROM budgets WHERE project_id = $1', [projectId]);
  return rows[0]!.count;
}

export async function insertBudget(db: Queryable, projectId: string, budget: NewBudget): Promise<BudgetRecord> {
  const id = newId('budget');
  await db.query(
    `INSERT INTO budgets (id, project_id, name, scope_type, scope_id, period, limit_usd, thresholds)
     VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8::numeric[])`,
    [id, projectId, budget.name, budget.scopeType, budget.scopeId, budget.period, budget.limitUsd, budget.thresholds],
  );
  return (await findBudget(db, projectId, id))!;
}

export async function findBudget(
  db: Queryable,
  projectId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<BudgetRecord | null> {
  if (options.lock) await db.query('SELECT 1 FROM budgets WHERE id = $1 AND project_id = $2 FOR UPDATE', [id, projectId]);
  const { rows } = await db.query<BudgetRecord>(`SELECT ${COLUMNS} FROM budgets b WHERE b.id = $1 AND b.project_id = $2`, [id, projectId]);
  return rows[0] ?? null;
}

export async function listBudgets(db: Queryable, projectId: string, page: PageRequest): Promise<Page<BudgetRecord>> {
  return selectPage<BudgetRecord>(db, { table: 'budgets', from: 'budgets b', alias: 'b', columns: COLUMNS, projectId, page });
}

export async function updateBudget(
  db: Queryable,
  projectId: string,
  id: string,
  change: { name?: string | null; limitUsd?: string; thresholds?: string[] },
): Promise<BudgetRecord | null> {
  const { rowCount } = await db.query(
    `UPDATE budgets SET
       name = CASE WHEN $3 THEN $4 ELSE name END,
       limit_usd = coalesce($5::numeric, limit_usd),
       thresholds = coalesce($6::numeric[], thresholds),
       updated_at = now()
     WHERE id = $1 AND project_id = $2`,
    [id, projectId, change.name !== undefined, change.name ?? null, change.limitUsd ?? null, change.thresholds ?? null],
  );
  return rowCount === 0 ? null : findBudget(db, projectId, id);
}

export async function deleteBudget(db: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM budgets WHERE id = $1 AND project_id = $2', [id, projectId]);
  return (rowCount ?? 0) > 0;
}

/**
 * What spend is charged to: its project, the key that starts the run, and the agents whose model calls it
 * makes (an agent run's agent; a network run's members; a call's own agent, if any).
 */
export interface Chargeable {
  projectId: string;
  apiKeyId: string | null;
  agentIds: string[];
}

/** Whether budget `b` applies to what the SQL expressions name: a project, a key and an array of agents. */
export const APPLIES = (projectId: string, apiKeyId: string, agentIds: string) => `b.project_id = ${projectId} AND (b.scope_type = 'project'
  OR (b.scope_type = 'api_key' AND b.scope_id = ${apiKeyId}) OR (b.scope_type = 'agent' AND b.scope_id = ANY(${agentIds})))`;

const MATCHING = APPLIES('$1', '$2', '$3::text[]');

const EXHAUSTED_BUDGET = statement(
  'exhausted_budget',
  `SELECT * FROM (SELECT ${COLUMNS}, b.limit_usd AS limit_value FROM budgets b WHERE ${MATCHING}) applying
     WHERE spent_usd::numeric >= limit_value ORDER BY created_at, id LIMIT 1`,
);

/** The first budget (oldest) of those that apply whose period's spend has reached its limit; null if none has. */
export async function exhaustedBudget(db: Queryable, charged: Chargeable): Promise<BudgetRecord | null> {
  const { rows } = await db.query<BudgetRecord>(EXHAUSTED_BUDGET, [charged.projectId, charged.apiKeyId, charged.agentIds]);
  if (!rows[0]) return null;
  const { limit_value: _limit, ...budget } = rows[0] as BudgetRecord & { limit_value: unknown };
  return budget;
}

/**
 * The budgets that apply to a project, key and agents (SQL expressions) and have a threshold left to reach this
 * period, as an array of ids in id order: those a new ledger row of theirs may make reach one.
 */
export const OPEN_THRESHOLD_BUDGETS = (projectId: string, apiKeyId: string, agentIds: string) =>
  `ARRAY(SELECT b.id FROM budgets b WHERE ${APPLIES(projectId, apiKeyId, agentIds)}
       AND EXISTS (SELECT 1 FROM unnest(b.thresholds) t WHERE NOT EXISTS (
         SELECT 1 FROM budget_thresholds_reached r WHERE r.budget_id = b.id AND r.period_start = ${PERIOD('b')} AND r.threshold = t))
     ORDER BY b.id)`;

const OPEN_THRESHOLDS = statement('open_thresholds', `SELECT ${OPEN_THRESHOLD_BUDGETS('$1', '$2', '$3::text[]')} AS ids`);

/**
 * Called in the transaction that records a usage row: every budget the row counts towards that has a
 * threshold left to reach this period is locked (in id order, so two transactions cannot deadlock), then
 * its spend is summed, the newly reached thresholds stored, and one `budget.threshold_reached` event
 * recorded for each. The lock makes a concurrent row wait, so its sum sees this one once committed: two
 * rows that cross a threshold together cannot both miss it. A project without budgets costs one query.
 */
export async function announceThresholds(tx: Queryable, charged: Chargeable): Promise<void> {
  const { rows } = await tx.query<{ ids: string[] }>(OPEN_THRESHOLDS, [charged.projectId, charged.apiKeyId, charged.agentIds]);
  await announceReached(tx, charged.projectId, rows[0]!.ids);
}

/**
 * announceThresholds past its first query, for a writer that read OPEN_THRESHOLD_BUDGETS in the statement that
 * recorded the usage row (`ids`, in id order): nothing to do when there are none.
 */
export async function announceReached(tx: Queryable, projectId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('budget:' || id)) FROM (SELECT unnest($1::text[]) AS id ORDER BY 1) ids`, [ids]);
  const { rows: reached } = await tx.query<{ budget_id: string }>(
    `INSERT INTO budget_thresholds_reached (budget_id, period_start, threshold)
     SELECT s.id, s.period_start, t FROM (
       SELECT b.id, b.limit_usd, b.thresholds, ${PERIOD('b')} AS period_start, ${SPENT('b')} AS spent FROM budgets b WHERE b.id = ANY($1)
     ) s, unnest(s.thresholds) t
     WHERE s.spent >= s.limit_usd * t
     ORDER BY s.id, t
     ON CONFLICT DO NOTHING RETURNING budget_id`,
    [ids],
  );
  for (const { budget_id } of reached) await recordEvent(tx, projectId, 'budget.threshold_reached', { object: 'budget', id: budget_id });
}
