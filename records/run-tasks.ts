/**
 * An agent's (or a network's) runs as A2A lists its tasks: the run whose status changed last comes first, by its
 * status time (when it ended, else when it started, else when it was made), and a page starts after the position
 * the last one ended at, so its cost does not grow with how far into the list it is (runs_agent_tasks,
 * runs_network_tasks).
 */
import type { Queryable } from './db.js';
import { COLUMNS as RUN_COLUMNS, statusCondition, type RunRecord, type RunStatus } from './runs.js';

export interface TaskRunQuery {
  projectId: string;
  target: { kind: 'agent' | 'network'; id: string };
  /** A context: the runs of a thread, or the run that is a context of its own (made without a thread). */
  contextId?: string;
  /** Runs in any of these, as the API shows statuses; an empty list matches none. */
  statuses?: RunStatus[];
  /** Runs whose status time is at or after this. */
  changedSince?: Date;
}

/** Where a page ended: the last run's status time, in microseconds since the epoch (exact), and its id. */
export interface TaskRunPosition {
  micros: string;
  id: string;
}

const STATUS_AT = 'COALESCE(completed_at, started_at, created_at)';

function conditionsOf(query: TaskRunQuery): { clauses: string[]; params: unknown[] } {
  const params: unknown[] = [query.projectId, query.target.id];
  const clauses = ['project_id = $1', query.target.kind === 'agent' ? 'agent_id = $2 AND parent_run_id IS NULL' : 'network_id = $2'];
  const add = (sql: string, ...values: unknown[]) => {
    let next = 0;
    clauses.push(
      sql.replace(/\?/g, () => {
        params.push(values[next++]);
        return `$${params.length}`;
      }),
    );
  };
  if (query.contextId !== undefined) add('(thread_id = ? OR (thread_id IS NULL AND id = ?))', query.contextId, query.contextId);
  if (query.statuses !== undefined) {
    if (query.statuses.length === 0) add('false');
    else add(...statusCondition(query.statuses));
  }
  if (query.changedSince !== undefined) add(`${STATUS_AT} >= ?`, query.changedSince);
  return { clauses, params };
}

export async function taskRunsPage(
  db: Queryable,
  query: TaskRunQuery,
  after: TaskRunPosition | null,
  limit: number,
): Promise<{ runs: RunRecord[]; next: TaskRunPosition | null }> {
  const { clauses, params } = conditionsOf(query);
  if (after) {
    params.push(after.micros, after.id);
    clauses.push(
      `(${STATUS_AT}, id) < (timestamptz 'epoch' + $${params.length - 1}::bigint * interval '1 microsecond', $${params.length})`,
    );
  }
  params.push(limit + 1);
  const { rows } = await db.query<RunRecord & { status_micros: string }>(
    `SELECT ${RUN_COLUMNS}, (EXTRACT(EPOCH FROM ${STATUS_AT}) * 1000000)::bigint::text AS status_micros
     FROM runs WHERE ${clauses.join(' AND ')} ORDER BY ${STATUS_AT} DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const next = rows.length > limit && last ? { micros: last.status_micros, id: last.id } : null;
  return { runs: page.map(({ status_micros: _, ...run }) => run), next };
}

/** How many runs the query matches, counted no further than `cap`. */
export async function countTaskRuns(db: Queryable, query: TaskRunQuery, cap: number): Promise<number> {
  const { clauses, params } = conditionsOf(query);
  params.push(cap);
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM runs WHERE ${clauses.join(' AND ')} LIMIT $${params.length}) matched`,
    params,
  );
  return rows[0]!.n;
}
