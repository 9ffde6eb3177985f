/** The I/O of a webhook delivery: one attempt (sent, then logged), and the ending of a delivery that failed. */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import { deliveryTarget, failDelivery, recordAttempt } from '../../records/webhook-deliveries.js';
import { outlastDatabaseOutage } from '../database-outage.js';
import type { WebhookSettings } from './client.js';
import { postEvent } from './send.js';

export interface WebhookActivityDependencies {
  db: Db;
  webhooks: WebhookSettings;
}

export const createWebhookActivities = ({ db, webhooks }: WebhookActivityDependencies) => ({
  /**
   * Sends the event once and logs the attempt; throws (to be retried) unless the endpoint answered 2xx.
   * `attemptsBefore`: attempts made before the workflow's (by the dispatcher: the first).
   */
  async attemptWebhookDelivery(deliveryId: string, attemptsBefore = 0): Promise<void> {
    const context = Context.current();
    const target = await outlastDatabaseOutage(context, () => deliveryTarget(db, deliveryId));
    // The endpoint was deleted (its deliveries with it), or the delivery has ended already.
    if (!target || target.delivery.status !== 'pending') return;
    if (target.endpoint.status !== 'enabled') throw ApplicationFailure.nonRetryable('the endpoint is disabled', 'endpoint_unavailable');
    const sent = await postEvent(target, webhooks.allowPrivate, context.cancellationSignal);
    const attempt = {
      attempt: attemptsBefore + context.info.attempt,
      responseStatus: sent.responseStatus,
      error: sent.error,
      durationMs: sent.durationMs,
    };
    // The attempt was made: it is logged once the database answers, and never made again for it. A delivery
    // whose endpoint was deleted meanwhile has ended with it.
    const logged = await outlastDatabaseOutage(context, () => recordAttempt(db, deliveryId, attempt, sent.delivered));
    if (!logged) return;
    if (!sent.delivered) throw ApplicationFailure.retryable(sent.error ?? 'not delivered', 'delivery_failed');
  },

  async failWebhookDelivery(deliveryId: string, disableAfter: number): Promise<void> {
    await failDelivery(db, deliveryId, disableAfter);
  },
});
