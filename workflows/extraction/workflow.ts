/** A file's extraction: deterministic orchestration only, every side effect is an activity. */
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { ExtractionActivities, ExtractionOutcome } from './activities.js';

const { extractFile } = proxyActivities<ExtractionActivities>({
  startToCloseTimeout: '30 minutes',
  // A worker that dies mid-extraction is noticed within this and the attempt runs again elsewhere.
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 6 },
});

const { markFileFailed } = proxyActivities<ExtractionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export async function extractFileWorkflow(input: { fileId: string }): Promise<ExtractionOutcome> {
  try {
    return await extractFile(input);
  } catch (err) {
    if (isCancellation(err)) throw err;
    const cause = err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
    await markFileFailed({ fileId: input.fileId, message: `Extraction did not finish: ${cause}` });
    return 'failed';
  }
}
