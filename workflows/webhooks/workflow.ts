/**
 * A delivery's retries, once its first attempt (the dispatcher's) failed: attempts with exponential backoff
 * until the endpoint answers 2xx or the attempts run out; then the delivery is ended as failed, which may
 * disable the endpoint.
 */
import { ActivityFailure, patched, proxyActivities, sleep, TimeoutFailure } from '@temporalio/workflow';
import type { AttemptBeat, createWebhookActivities } from './activities.js';
import { LONGEST_WAIT_MS, waitAfterAttempt } from './backoff.js';
import { waitAfterRefusal } from '../refusal-backoff.js';
import type { DeliveryInput } from './client.js';
import { WEBHOOK_TASK_QUEUE } from '../names.js';

type Activities = ReturnType<typeof createWebhookActivities>;

/** Workflows that scheduled their attempts before attempts heartbeated go on without heartbeats, so that they replay. */
export const ATTEMPT_HEARTBEATS_PATCH = 'webhook-attempt-heartbeats';
/** Workflows that counted their attempts by Temporal's tries go on so, so that they replay. */
export const ATTEMPTS_BY_LOG_PATCH = 'webhook-attempts-by-log';

/**
 * Tries of an attempt call that may end before they send, beyond the attempts themselves: a try whose worker
 * died or stalled before it sent, or that the database held past its 5 minutes, made no attempt and is not
 * counted as one. Bounded, so that a delivery still ends however its tries fail.
 */
const UNSENT_TRIES = 5;

// Bookkeeping outlasts a database outage: its attempts are not the endpoint's.
const { failWebhookDelivery } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function webhookDeliveryWorkflow({ deliveryId, retry, attemptsMade = 0 }: DeliveryInput): Promise<void> {
  if (attemptsMade >= retry.maximumAttempts) return await failWebhookDelivery(deliveryId, retry.disableAfter);
  const waitAfter = (attempts: number) => waitAfterAttempt(retry.initialIntervalMs, attempts);
  if (attemptsMade > 0) await sleep(waitAfter(attemptsMade));
  const heartbeating = patched(ATTEMPT_HEARTBEATS_PATCH);
  try {
    if (heartbeating) {
      // An attempt refused for its project's share of the slots was not made: waited out, and asked again.
      // Attempts are counted by the delivery's log, where its workflow began so; else by Temporal's tries.
      const byLog = patched(ATTEMPTS_BY_LOG_PATCH);
      let made = attemptsMade;
      for (let refusals = 0; ; refusals++) {
        const left = retry.maximumAttempts - made;
        const { attemptWebhookDelivery } = heartbeatingAttempts(byLog ? left + UNSENT_TRIES : left);
        const refused = await (byLog
          ? attemptWebhookDelivery(deliveryId, made, retry.initialIntervalMs, true, retry.maximumAttempts)
          : attemptWebhookDelivery(deliveryId, made, retry.initialIntervalMs, true));
        if (!refused) break;
        made = refused.attemptsMade;
        await sleep(waitAfterRefusal(refusals, Math.random(), refused.waitFactor));
      }
    } else {
      const { attemptWebhookDelivery } = proxyActivities<Activities>({
        taskQueue: WEBHOOK_TASK_QUEUE,
        startToCloseTimeout: '5 minutes',
        retry: {
          initialInterval: waitAfter(attemptsMade + 1),
          backoffCoefficient: 2,
          maximumInterval: LONGEST_WAIT_MS,
          maximumAttempts: retry.maximumAttempts - attemptsMade,
          nonRetryableErrorTypes: ['endpoint_unavailable'],
        },
      });
      // Called as workflows started before the dispatcher's first attempts called it, so that they replay.
      await (attemptsMade > 0 ? attemptWebhookDelivery(deliveryId, attemptsMade) : attemptWebhookDelivery(deliveryId));
    }
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    // The last attempt, given up when its worker died, is logged with the delivery's end: no attempt follows to log it.
    const abandoned =
      heartbeating && err.cause instanceof TimeoutFailure ? (err.cause.lastHeartbeatDetails as AttemptBeat | undefined) : undefined;
    await (abandoned
      ? failWebhookDelivery(deliveryId, retry.disableAfter, abandoned)
      : failWebhookDelivery(deliveryId, retry.disableAfter));
  }
}

/**
 * An attempt's request is bounded at 15 s; the rest of its 5 minutes is room to record it through a database
 * outage. It heartbeats all along: a worker that dies mid-attempt misses them, and the attempt is made again
 * on another worker within seconds, not when the 5 minutes are up. A failed attempt names the wait before the
 * next (the delivery's backoff); the retry policy's own short waits are for attempts that never ended.
 */
function heartbeatingAttempts(maximumAttempts: number) {
  return proxyActivities<Activities>({
    taskQueue: WEBHOOK_TASK_QUEUE,
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '5 seconds',
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '10 seconds',
      maximumAttempts,
      nonRetryableErrorTypes: ['endpoint_unavailable'],
    },
  });
}
