/**
 * The workers of a pool the operator runs for one project (AGENTPLANE_WORKER_POOLS) run that project's runs
 * only. The API already refuses a network of another project that names the pool; this holds even for a
 * network stored otherwise: an activity for another project's run, or one that is no run's, fails without
 * retrying before it reads or calls anything.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import type { Queryable } from '../records/db.js';

export function projectGuard(db: Queryable, taskQueue: string, projectId: string): ActivityInterceptorsFactory {
  const inbound: ActivityInboundCallsInterceptor = {
    async execute(input, next) {
      const arg = input.args[0] as { runId?: unknown; childRunId?: unknown } | undefined;
      const runId = arg?.runId ?? arg?.childRunId;
      if (typeof runId !== 'string') {
        throw ApplicationFailure.nonRetryable(
          `The worker pool ${taskQueue} runs the runs of ${projectId} only, and this activity is no run's.`,
          'worker_pool_refused',
        );
      }
      const { rows } = await db.query<{ project_id: string }>('SELECT project_id FROM runs WHERE id = $1', [runId]);
      if (rows[0]?.project_id !== projectId) {
        throw ApplicationFailure.nonRetryable(
          `The worker pool ${taskQueue} runs the runs of ${projectId} only; run ${runId} is not one of them.`,
          'worker_pool_refused',
        );
      }
      return next(input);
    },
  };
  return () => ({ inbound });
}
