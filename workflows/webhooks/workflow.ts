/**
 * A delivery's retries, once its first attempt (the dispatcher's) failed: attempts with exponential backoff
 * until the endpoint answers 2xx or the attempts run out; then the delivery is ended as failed, which may
 * disable the endpoint.
 */
import { ActivityFailure, proxyActivities, sleep } from '@temporalio/workflow';
import type { createWebhookActivities } from './activities.js';
import type { DeliveryInput } from './client.js';
import { WEBHOOK_TASK_QUEUE } from '../names.js';

type Activities = ReturnType<typeof createWebhookActivities>;

const LONGEST_WAIT_MS = 4 * 60 * 60 * 1000;

// Bookkeeping outlasts a database outage: its attempts are not the endpoint's.
const { failWebhookDelivery } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function webhookDeliveryWorkflow({ deliveryId, retry, attemptsMade = 0 }: DeliveryInput): Promise<void> {
  if (attemptsMade >= retry.maximumAttempts) return await failWebhookDelivery(deliveryId, retry.disableAfter);
  // The wait after a delivery's nth attempt: the initial interval, doubled after each attempt, at most 4 hours.
  const waitAfter = (attempts: number) => Math.min(retry.initialIntervalMs * 2 ** (attempts - 1), LONGEST_WAIT_MS);
  if (attemptsMade > 0) await sleep(waitAfter(attemptsMade));
  const { attemptWebhookDelivery } = proxyActivities<Activities>({
    taskQueue: WEBHOOK_TASK_QUEUE,
    // An attempt's request is bounded at 15 s; the rest is room to record it through a database outage.
    startToCloseTimeout: '5 minutes',
    retry: {
      initialInterval: waitAfter(attemptsMade + 1),
      backoffCoefficient: 2,
      maximumInterval: LONGEST_WAIT_MS,
      maximumAttempts: retry.maximumAttempts - attemptsMade,
      nonRetryableErrorTypes: ['endpoint_unavailable'],
    },
  });
  try {
    // Called as workflows started before the dispatcher's first attempts called it, so that they replay.
    await (attemptsMade > 0 ? attemptWebhookDelivery(deliveryId, attemptsMade) : attemptWebhookDelivery(deliveryId));
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    await failWebhookDelivery(deliveryId, retry.disableAfter);
  }
}
