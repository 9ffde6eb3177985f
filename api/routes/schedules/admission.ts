/**
 * A schedule's time, made into a run: the same admission as the run endpoints (the target's concurrency policy,
 * the key's limits, the budgets) in one transaction under the schedule's row lock, so a retried time finds the
 * run it made rather than making another. A refusal makes no run and is kept on the schedule as `last_error`.
 * The worker's process gives it to the schedule activities (workflows/schedules/activities.ts).
 */
import type { Client } from '@temporalio/client';
import type { Db, Queryable } from '../../../records/db.js';
import { findApiKey } from '../../../records/api-keys.js';
import { findRun, insertRun, isFinished, recordRunWorkflowStarted } from '../../../records/runs.js';
import { findSchedule, recordScheduleError, runOfFiring, type ScheduleRecord } from '../../../records/schedules.js';
import { ApiError } from '../../errors.js';
import type { Caller, RateLimitDefaults } from '../../context.js';
import { callerOfKey } from '../../middleware/auth.js';
import { refuseOverLimits } from '../runs/limits.js';
import { interruptRuns, lockUnderConcurrency, runnableOf, type Warn } from '../runs/admission.js';
import { startRunOf } from '../../../workflows/runs/client.js';
import type { ScheduledRunAdmission } from '../../../workflows/schedules/client.js';

/** The runs of a schedule are its key's: that key's limits and budgets apply, as to the runs it asks for itself. */
async function callerOfSchedule(db: Queryable, schedule: ScheduleRecord): Promise<Caller> {
  const key = schedule.api_key_id === null ? null : await findApiKey(db, schedule.project_id, schedule.api_key_id);
  if (key) return callerOfKey(key);
  return {
    apiKeyId: schedule.api_key_id ?? '',
    projectId: schedule.project_id,
    scopes: [],
    bootstrap: false,
    controller: false,
    rateLimits: { requests_per_minute: null, concurrent_runs: null },
  };
}

type Admitted =
  | { runId: string; kind: 'agent' | 'network'; interrupted: string[]; taskQueue: string | undefined }
  | { runId: null; refusal: { code: string; message: string } | null };

/**
 * Makes the run of the schedule's time (once), starts its workflow, and answers its id; null when it makes none.
 * `rateLimits` are the deployment's defaults, as the API applies them to runs.
 */
export const scheduledRunAdmission =
  ({ db, rateLimits }: { db: Db; rateLimits?: RateLimitDefaults }): ScheduledRunAdmission =>
  async ({ scheduleId, projectId, scheduledAt }, client: Client, warn: Warn) => {
    const at = new Date(scheduledAt);
    const admitted = await db
      .transaction(async (tx): Promise<Admitted> => {
        // Scoped by the project the Schedule was made for: a schedule only ever starts its own project's runs.
        const schedule = await findSchedule(tx, projectId, scheduleId, { lock: true });
        if (!schedule || schedule.paused) return { runId: null, refusal: null };
        const kind = schedule.agent_id !== null ? 'agent' : 'network';
        const targetId = (schedule.agent_id ?? schedule.network_id)!;
        const made = await runOfFiring(tx, scheduleId, at);
        if (made !== null)
          return { runId: made, kind, interrupted: [], taskQueue: (await runnableOf(tx, projectId, kind, targetId)).taskQueue };
        const caller = await callerOfSchedule(tx, schedule);
        const { current, interrupted } = await lockUnderConcurrency(tx, projectId, kind, targetId);
        await refuseOverLimits(tx, { rateLimits }, caller, current.agentIds);
        const { run } = schedule;
        const runId = await insertRun(tx, {
          projectId,
          target: current.target,
          apiKeyId: caller.apiKeyId,
          model: run.model ?? current.model,
          input: typeof run.input === 'string' ? [{ role: 'user', content: run.input }] : run.input,
          fileIds: run.file_ids ?? [],
          previousRunId: null,
          threadId: null,
          subjectId: run.subject_id ?? null,
          maxSteps: kind === 'agent' ? (run.max_steps ?? current.maxSteps) : current.maxSteps,
          maxCostUsd: run.max_cost_usd ?? current.maxCostUsd,
          metadata: run.metadata ?? {},
          scheduled: { scheduleId, at },
        });
        if (schedule.last_error !== null) await recordScheduleError(tx, scheduleId, null);
        return { runId, kind, interrupted, taskQueue: current.taskQueue };
      })
      .catch((err: unknown): Admitted => {
        // A refusal the run endpoints would answer (a 4xx: the agent deleted, busy, a limit or budget reached).
        if (err instanceof ApiError && err.status < 500) return { runId: null, refusal: { code: err.code, message: err.message } };
        throw err;
      });
    if (admitted.runId === null) {
      if (admitted.refusal)
        await recordScheduleError(db, scheduleId, { ...admitted.refusal, scheduled_at: Math.floor(at.getTime() / 1000) });
      return null;
    }
    await interruptRuns({ db, temporal: client }, admitted.kind, admitted.interrupted, warn);
    const run = (await findRun(db, projectId, admitted.runId))!;
    if (!isFinished(run.status)) {
      // Idempotent: a retried time starts the workflow it may already have started.
      await startRunOf(client, { id: run.id, projectId, network: admitted.kind === 'network', workerPool: admitted.taskQueue ?? null });
      await recordRunWorkflowStarted(db, run.id);
    }
    return run.id;
  };
