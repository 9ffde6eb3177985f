/**
 * Memory's workflow: after a run on a thread for a subject ends, what the subject stated in the run's messages is
 * stored as memories. It outlives the run's workflow, and nothing waits for it: neither the thread's next run nor
 * the run's caller.
 */
import { proxyActivities, startChild, ParentClosePolicy } from '@temporalio/workflow';
import type { MemoryActivities } from './activities.js';
import { memoryWorkflowId } from './ids.js';
import { MODEL_RETRY_MAX_INTERVAL_MS } from '../../models/retry-interval.js';
import { FINAL_MODEL_FAILURES } from '../../models/failure-kinds.js';

// A worker that dies mid-way is noticed within the heartbeat timeout and the call made again elsewhere; storing the
// facts again adds nothing. A memory model that keeps failing is given up after a few tries, for the offline engine.
const withModel = proxyActivities<MemoryActivities>({
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '5 seconds',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: MODEL_RETRY_MAX_INTERVAL_MS,
    maximumAttempts: 4,
    nonRetryableErrorTypes: [...FINAL_MODEL_FAILURES],
  },
});
const offline = proxyActivities<MemoryActivities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 20 },
});

/** Called by the run and network workflows as a run ends: starts the reading of its messages when its ending asks for it. */
export async function learnFromEndedRun(runId: string, ending: { memory?: boolean }): Promise<void> {
  if (!ending.memory) return;
  await startChild(memoryWorkflow, {
    workflowId: memoryWorkflowId(runId),
    args: [{ runId }],
    parentClosePolicy: ParentClosePolicy.ABANDON,
  }).catch(() => {
    // Already started by an earlier ending of the same run.
  });
}

export async function memoryWorkflow({ runId }: { runId: string }): Promise<void> {
  try {
    await withModel.learnFromRun({ runId });
  } catch {
    await offline.learnFromRun({ runId, withModel: false });
  }
}
