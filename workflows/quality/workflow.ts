/**
 * Quality's workflows: the judge's verdict at the end of a run (called by the run and network workflows),
 * and a backfill, which scores a past range of finished runs again in keyset batches.
 */
import { continueAsNew, proxyActivities, startChild, ParentClosePolicy } from '@temporalio/workflow';
import type { QualityActivities } from './activities.js';
import { runJudgeWorkflowId } from './ids.js';
import { MODEL_RETRY_MAX_INTERVAL_MS } from '../../models/retry-interval.js';
import { FINAL_MODEL_FAILURES } from '../../models/failure-kinds.js';
import { failureMessage } from '../failure-message.js';

// A provider that is down is asked three times in all; after that the run goes without a judge score.
const judging = proxyActivities<QualityActivities>({
  startToCloseTimeout: '3 minutes',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: MODEL_RETRY_MAX_INTERVAL_MS,
    maximumAttempts: 3,
    nonRetryableErrorTypes: [...FINAL_MODEL_FAILURES],
  },
});

const backfilling = proxyActivities<QualityActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '3 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 10 },
});

/**
 * The judge's score of a run that has ended, when its ending asks for one (a judge is configured and the
 * run has an answer). The judge works in a workflow of its own that outlives the run's: nothing waits for
 * its verdict, neither the agent's next run nor a network's next hop.
 */
export async function judgeEndedRun(runId: string, ending: { judge?: boolean }): Promise<void> {
  if (!ending.judge) return;
  await startChild(runJudgeWorkflow, {
    workflowId: runJudgeWorkflowId(runId),
    args: [{ runId }],
    parentClosePolicy: ParentClosePolicy.ABANDON,
  }).catch(() => {
    // Already started by an earlier ending of the same run.
  });
}

/** Never fails: a judge that stays unreachable or refuses the call leaves the run its heuristic scores only. */
export async function runJudgeWorkflow({ runId }: { runId: string }): Promise<void> {
  try {
    await judging.judgeEndedRun({ runId });
  } catch {
    // Nothing more to do: the verdict is absent.
  }
}

/** Batches per workflow history; past them the backfill goes on as a new run of the same workflow. */
const BATCHES_PER_HISTORY = 500;

export async function qualityBackfillWorkflow({ backfillId }: { backfillId: string }): Promise<void> {
  try {
    for (let batch = 0; ; batch++) {
      if (batch === BATCHES_PER_HISTORY) return await continueAsNew<typeof qualityBackfillWorkflow>({ backfillId });
      const { done } = await backfilling.scoreBackfillBatch({ backfillId });
      if (done) break;
    }
    await backfilling.finishBackfill({ backfillId });
  } catch (err) {
    await backfilling.finishBackfill({
      backfillId,
      error: { code: 'backfill_failed', message: `The backfill could not go on: ${failureMessage(err)}` },
    });
  }
}
