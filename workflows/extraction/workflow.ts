/** A file's extraction: deterministic orchestration only, every side effect is an activity. */
import { isCancellation, proxyActivities } from '@temporalio/workflow';
import type { ExtractionActivities, ExtractionOutcome } from './activities.js';
import { EXTRACTION_TASK_QUEUE } from '../names.js';
import { failureMessage } from '../failure-message.js';

const RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 6 } as const;

// The CPU-heavy stages run on their own queue. A worker that dies mid-stage is noticed within the heartbeat
// timeout and the stage runs again elsewhere, resuming from what it had stored. A stage beats every second, and its
// synchronous work runs in pool threads, never holding the worker's event loop past a small part of the timeout.
const { extractFileContent } = proxyActivities<ExtractionActivities>({
  taskQueue: EXTRACTION_TASK_QUEUE,
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '10 seconds',
  retry: RETRY,
});

const { completeFileExtraction } = proxyActivities<ExtractionActivities>({
  taskQueue: EXTRACTION_TASK_QUEUE,
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '10 seconds',
  retry: RETRY,
});

const { markFileFailed } = proxyActivities<ExtractionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export async function extractFileWorkflow(input: { fileId: string }): Promise<ExtractionOutcome> {
  try {
    // A long document's content comes a slice of time at a time, each slice a task of its own that other
    // projects' files queue beside (the project is the fairness key), rather than in one task of hours.
    let content = await extractFileContent({ ...input, inSlices: true });
    while (content === 'more') content = await extractFileContent({ ...input, inSlices: true });
    if (content !== 'extracted') return content;
    return await completeFileExtraction(input);
  } catch (err) {
    if (isCancellation(err)) throw err;
    await markFileFailed({ fileId: input.fileId, message: `Extraction did not finish: ${failureMessage(err)}` });
    return 'failed';
  }
}
