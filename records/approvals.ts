/**
 * Approvals: a tool call that waits for a person. Made with its step, decided once (approved, with the model's
 * arguments or edited ones, or rejected) or expired, which counts as a rejection. While any of a run's calls wait,
 * the run and the runs above it in a network's tree count it (`runs.pending_approvals`) and show `requires_action`.
 */
import type { Queryable } from './db.js';
import { recordEvent } from './events.js';
import { newId } from './ids.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import { appendRunEvent } from './run-events.js';

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired' | 'cancelled';

export interface ApprovalRecord {
  id: string;
  project_id: string;
  run_id: string;
  step_index: number;
  agent_id: string;
  network_id: string | null;
  tool_name: string;
  arguments: Record<string, unknown>;
  status: ApprovalStatus;
  decided_arguments: Record<string, unknown> | null;
  reason: string | null;
  decided_by: string | null;
  created_at: Date;
  expires_at: Date;
  decided_at: Date | null;
}

const COLUMNS = `id, project_id, run_id, step_index, agent_id, network_id, tool_name, arguments, status, decided_arguments, reason,
  decided_by, created_at, expires_at, decided_at`;

// The run and every run above it: a hop's waiting call is its network run's too.
const RUN_AND_ANCESTORS = `WITH RECURSIVE tree AS (
    SELECT id, parent_run_id FROM runs WHERE id = $1
    UNION ALL SELECT r.id, r.parent_run_id FROM runs r JOIN tree t ON r.id = t.parent_run_id
  )`;

async function countPending(tx: Queryable, runId: string, delta: number): Promise<void> {
  await tx.query(
    `${RUN_AND_ANCESTORS} UPDATE runs SET pending_approvals = greatest(0, pending_approvals + $2) WHERE id IN (SELECT id FROM tree)`,
    [runId, delta],
  );
}

export interface NewApproval {
  projectId: string;
  runId: string;
  stepIndex: number;
  agentId: string;
  networkId: string | null;
  toolName: string;
  arguments: Record<string, unknown>;
  timeoutSeconds: number;
}

/** The step's approval, made (and announced) if it has none yet: a retried activity finds the one it made. */
export async function requestApproval(tx: Queryable, approval: NewApproval): Promise<ApprovalRecord> {
  const { rows } = await tx.query<ApprovalRecord>(
    `INSERT INTO approvals (id, project_id, run_id, step_index, agent_id, network_id, tool_name, arguments, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))
     ON CONFLICT (run_id, step_index) DO NOTHING RETURNING ${COLUMNS}`,
    [
      newId('appr'),
      approval.projectId,
      approval.runId,
      approval.stepIndex,
      approval.agentId,
      approval.networkId,
      approval.toolName,
      approval.arguments,
      approval.timeoutSeconds,
    ],
  );
  const made = rows[0];
  if (!made) return (await approvalOfStep(tx, approval.runId, approval.stepIndex))!;
  await countPending(tx, approval.runId, 1);
  await appendRunEvent(tx, approval.runId, 'approval.requested', {
    approval_id: made.id,
    step: approval.stepIndex,
    tool_name: approval.toolName,
    expires_at: Math.floor(made.expires_at.getTime() / 1000),
  });
  await recordEvent(tx, approval.projectId, 'approval.requested', { object: 'approval', id: made.id });
  return made;
}

export async function approvalOfStep(db: Queryable, runId: string, stepIndex: number): Promise<ApprovalRecord | null> {
  const { rows } = await db.query<ApprovalRecord>(`SELECT ${COLUMNS} FROM approvals WHERE run_id = $1 AND step_index = $2`, [
    runId,
    stepIndex,
  ]);
  return rows[0] ?? null;
}

export async function findApproval(
  db: Queryable,
  projectId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ApprovalRecord | null> {
  const { rows } = await db.query<ApprovalRecord>(
    `SELECT ${COLUMNS} FROM approvals WHERE id = $1 AND project_id = $2${options.lock ? ' FOR UPDATE' : ''}`,
    [id, projectId],
  );
  return rows[0] ?? null;
}

export interface ApprovalFilter {
  status?: ApprovalStatus;
  agentId?: string;
  networkId?: string;
  runId?: string;
}

export async function listApprovals(
  db: Queryable,
  projectId: string,
  page: PageRequest,
  filter: ApprovalFilter,
): Promise<Page<ApprovalRecord>> {
  return selectPage<ApprovalRecord>(db, {
    table: 'approvals',
    columns: COLUMNS,
    projectId,
    page,
    where: { status: filter.status, agent_id: filter.agentId, network_id: filter.networkId, run_id: filter.runId },
  });
}

export interface Decision {
  status: 'approved' | 'rejected' | 'expired';
  arguments?: Record<string, unknown>;
  reason?: string;
  decidedBy?: string;
}

/**
 * Records the decision on a pending approval and announces it; null when the approval was decided already, or
 * when its time has run out (for `expired`: has not yet), so that a second decision changes nothing.
 */
export async function decideApproval(tx: Queryable, approval: ApprovalRecord, decision: Decision): Promise<ApprovalRecord | null> {
  const { rows } = await tx.query<ApprovalRecord>(
    `UPDATE approvals SET status = $2, decided_arguments = $3, reason = $4, decided_by = $5, decided_at = now()
     WHERE id = $1 AND status = 'pending' AND expires_at ${decision.status === 'expired' ? '<=' : '>'} now() RETURNING ${COLUMNS}`,
    [approval.id, decision.status, decision.arguments ?? null, decision.reason ?? null, decision.decidedBy ?? null],
  );
  const decided = rows[0];
  if (!decided) return null;
  await countPending(tx, decided.run_id, -1);
  await appendRunEvent(tx, decided.run_id, 'approval.resolved', {
    approval_id: decided.id,
    step: decided.step_index,
    approval_status: decided.status,
  });
  await recordEvent(tx, decided.project_id, 'approval.resolved', { object: 'approval', id: decided.id });
  return decided;
}

/**
 * A run that ends takes its waiting calls with it: cancelled in the statement that ends it
 * (CANCEL_ENDING_RUN_APPROVALS), they no longer count on the runs above.
 */
export async function uncountCancelledApprovals(tx: Queryable, runId: string, cancelled: number): Promise<void> {
  if (cancelled > 0) await countPending(tx, runId, -cancelled);
}

/** Cancels the waiting calls of run `$1`, as a part of the statement that ends it (`ended`, its row once ended). */
export const CANCEL_ENDING_RUN_APPROVALS = `UPDATE approvals SET status = 'cancelled', decided_at = now()
  WHERE run_id = $1 AND status = 'pending' AND EXISTS (SELECT 1 FROM ended) RETURNING id`;
