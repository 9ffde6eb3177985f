/**
 * One delivery: attempts with exponential backoff until the endpoint answers 2xx or the attempts run out;
 * then the delivery is ended as failed, which may disable the endpoint.
 */
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { createWebhookActivities } from './activities.js';
import type { DeliveryInput } from './client.js';
import { WEBHOOK_TASK_QUEUE } from '../names.js';

type Activities = ReturnType<typeof createWebhookActivities>;

// Bookkeeping outlasts a database outage: its attempts are not the endpoint's.
const { failWebhookDelivery } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function webhookDeliveryWorkflow({ deliveryId, retry }: DeliveryInput): Promise<void> {
  const { attemptWebhookDelivery } = proxyActivities<Activities>({
    taskQueue: WEBHOOK_TASK_QUEUE,
    // An attempt's request is bounded at 15 s; the rest is room to record it through a database outage.
    startToCloseTimeout: '5 minutes',
    retry: {
      initialInterval: retry.initialIntervalMs,
      backoffCoefficient: 2,
      maximumInterval: '4 hours',
      maximumAttempts: retry.maximumAttempts,
      nonRetryableErrorTypes: ['endpoint_unavailable'],
    },
  });
  try {
    await attemptWebhookDelivery(deliveryId);
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    await failWebhookDelivery(deliveryId, retry.disableAfter);
  }
}
