/**
 * An experiment: its items' runs, up to its concurrency at once, each a child workflow (the run's own workflow,
 * as any run has), each item scored once its run ends; then the experiment ends with its summary. Cancelling the
 * experiment cancels the runs going with it. Deterministic orchestration only: the I/O is in activities.ts.
 */
import { CancellationScope, isCancellation, ParentClosePolicy, proxyActivities, sleep, startChild } from '@temporalio/workflow';
import { ActivityCancellationType, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { ExperimentActivities } from './activities.js';
import { failureMessage } from '../failure-message.js';

const bookkeeping = proxyActivities<ExperimentActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

// A run the key has no room for (or a `reject` agent busy) waits its turn: asked again every few seconds, for as
// long as it takes, until the experiment is cancelled. A cancel that comes while an attempt is under way waits for
// it: an attempt that recorded the item's run says so, and the run is ended with the experiment.
const starting = proxyActivities<ExperimentActivities>({
  startToCloseTimeout: '1 minute',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 1.5, maximumInterval: '15 seconds' },
});

/** How often an item whose run's workflow another started (a restore's recovery) is looked at until the run ends. */
const FOREIGN_RUN_RECHECK = '10 seconds';

async function runItem(itemId: string): Promise<void> {
  const run = await starting.startItemRun({ itemId });
  if ('ended' in run) return;
  let child;
  try {
    child = await startChild(run.workflowType, {
      workflowId: run.workflowId,
      taskQueue: run.taskQueue,
      args: [{ runId: run.runId }],
      // Cancelling the experiment cancels its runs; ending it any other way leaves none running.
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
  } catch (err) {
    if (isCancellation(err)) {
      // Cancelled before the run's workflow started: nothing else would end the run, so it ends here.
      await CancellationScope.nonCancellable(() => bookkeeping.endRunNeverStarted({ runId: run.runId }));
      throw err;
    }
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
      await bookkeeping.settleItem({ itemId, force: true });
      return;
    }
    // Started by another (recovery after a restore): not this workflow's child, so it is looked at until it ends.
    while (!(await bookkeeping.settleItem({ itemId }))) await sleep(FOREIGN_RUN_RECHECK);
    return;
  }
  try {
    await child.result();
  } catch (err) {
    if (isCancellation(err)) throw err;
  }
  await bookkeeping.settleItem({ itemId, force: true });
}

export async function experimentWorkflow({ experimentId }: { experimentId: string }): Promise<void> {
  const end = (status: 'completed' | 'failed' | 'cancelled', error?: { code: string; message: string }) =>
    CancellationScope.nonCancellable(() => bookkeeping.endExperiment({ experimentId, status, error }));
  try {
    const plan = await bookkeeping.beginExperiment({ experimentId });
    if (!plan) return;
    let next = 0;
    // Each lane takes the next item as its last one ends: at most `concurrency` runs at once.
    const lane = async () => {
      while (next < plan.itemIds.length) await runItem(plan.itemIds[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(plan.concurrency, plan.itemIds.length) }, lane));
    await end('completed');
  } catch (err) {
    if (isCancellation(err)) return await end('cancelled');
    await end('failed', { code: 'internal_error', message: `The experiment could not go on: ${failureMessage(err)}` });
  }
}
