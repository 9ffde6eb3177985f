/** The I/O of a webhook delivery: one attempt (sent, then logged), and the ending of a delivery that failed. */
import { ApplicationFailure, CancelledFailure, Context, log } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import { deliveryTarget, failDelivery, recordAbandonedAttempt, recordAttempt } from '../../records/webhook-deliveries.js';
import { outlastDatabaseOutage } from '../database-outage.js';
import { keepBeating } from '../heartbeats.js';
import { SlotShares } from '../slot-shares.js';
import { waitAfterAttempt } from './backoff.js';
import type { WebhookSettings } from './client.js';
import { postEvent } from './send.js';

/** Webhook attempts in flight at once on each worker: they wait on the network (up to 15 s each), not the CPU. */
export const WEBHOOK_ATTEMPTS_AT_ONCE = 64;
/**
 * Of those, the most one project's retry attempts may hold. A project whose receivers never answer would
 * otherwise hold every slot for 15 s at a time, and every other project's retries would wait for one.
 */
export const RETRY_ATTEMPTS_PER_PROJECT = WEBHOOK_ATTEMPTS_AT_ONCE / 4;

export interface WebhookActivityDependencies {
  db: Db;
  webhooks: WebhookSettings;
}

/** What an attempt's heartbeats carry, for the attempt after it should its worker die: which it was, and when it began. */
export interface AttemptBeat {
  attempt: number;
  startedAt: number;
}

/**
 * An attempt not made: its project's attempts held their share of the worker's slots. The delivery's
 * workflow waits, and asks again with the attempts made before it, so that the refusal is not one of them.
 */
export interface AttemptRefused {
  attemptsMade: number;
  /**
   * How many times its usual wait the delivery should wait before it asks again: more than 1 while many of its
   * project's deliveries wait on this worker (`SlotShares.waitFactor`), so that a burst of waiting retries spreads
   * out. Absent from refusals recorded before it was answered.
   */
  waitFactor?: number;
}

/** The failure of an attempt call once the delivery's log holds its last attempt: the delivery has failed. */
export const ATTEMPTS_MADE = 'attempts_made';

export const ABANDONED_ATTEMPT_ERROR = 'abandoned: the worker making it stopped before its outcome was recorded';

export const createWebhookActivities = ({ db, webhooks }: WebhookActivityDependencies) => {
  const shares = new SlotShares(RETRY_ATTEMPTS_PER_PROJECT, reportAttemptsHeld);
  return {
    /**
     * Sends the event once and logs the attempt; throws (to be retried) unless the endpoint answered 2xx.
     * `attemptsBefore`: attempts made before this call's (by the dispatcher, or before a refusal). `retryInitialMs`,
     * from workflows whose attempts heartbeat: a failed attempt asks for the delivery's backoff before the next.
     * `shared`, from workflows that wait out a refusal: the attempt is not made while its project's attempts
     * hold their share of this worker's slots, and the answer says so. `maximumAttempts`, from workflows that
     * count attempts by the delivery's log: no attempt is made past it, and a failed last attempt is final.
     */
    async attemptWebhookDelivery(
      deliveryId: string,
      attemptsBefore = 0,
      retryInitialMs?: number,
      shared = false,
      maximumAttempts?: number,
    ): Promise<AttemptRefused | undefined> {
      const context = Context.current();
      // The attempt an earlier try of this call had in flight when it was given up (its worker died), if any:
      // carried by this try's heartbeats until it is logged, so that it is not lost should this one die too.
      const previous = context.info.heartbeatDetails as AttemptBeat | undefined;
      const beat = keepBeating(previous);
      // Until the delivery's log is read, a failure waits as the next attempt's would.
      let attempt = attemptsBefore + 1;
      try {
        if (previous) await outlastDatabaseOutage(context, () => recordAbandonedAttempt(db, deliveryId, abandonedAttempt(previous)));
        const target = await outlastDatabaseOutage(context, () => deliveryTarget(db, deliveryId));
        // The endpoint was deleted (its deliveries with it), or the delivery has ended already.
        if (!target || target.delivery.status !== 'pending') return undefined;
        // Numbered after the attempts logged, not by this call's tries: a try that ended before it sent (its
        // worker died or stalled, the database failed it) made no attempt.
        attempt = Math.max(attemptsBefore, target.delivery.attempts) + 1;
        if (maximumAttempts !== undefined && attempt > maximumAttempts)
          throw ApplicationFailure.nonRetryable(`the delivery's ${maximumAttempts} attempts were made`, ATTEMPTS_MADE);
        if (target.endpoint.status !== 'enabled') throw ApplicationFailure.nonRetryable('the endpoint is disabled', 'endpoint_unavailable');
        const giveBack = shared ? shares.take(target.endpoint.project_id, { id: deliveryId }) : () => undefined;
        if (!giveBack) return { attemptsMade: attempt - 1, waitFactor: shares.waitFactor(target.endpoint.project_id) };
        beat.carry({ attempt, startedAt: Date.now() } satisfies AttemptBeat);
        const sent = await postEvent(target, webhooks.allowPrivate, context.cancellationSignal).finally(giveBack);
        const outcome = { attempt, responseStatus: sent.responseStatus, error: sent.error, durationMs: sent.durationMs };
        // The attempt was made: it is logged once the database answers, and never made again for it. A delivery
        // whose endpoint was deleted meanwhile has ended with it.
        const logged = await outlastDatabaseOutage(context, () => recordAttempt(db, deliveryId, outcome, sent.delivered));
        if (!logged) return undefined;
        if (!sent.delivered) {
          const message = sent.error ?? 'not delivered';
          if (maximumAttempts !== undefined && attempt >= maximumAttempts) throw ApplicationFailure.nonRetryable(message, ATTEMPTS_MADE);
          throw ApplicationFailure.retryable(message, 'delivery_failed');
        }
      } catch (err) {
        throw retryAfterBackoff(err, attempt, retryInitialMs);
      } finally {
        beat.stop();
      }
      return undefined;
    },

    /** `abandoned`: the last attempt, given up when its worker died, logged first. */
    async failWebhookDelivery(deliveryId: string, disableAfter: number, abandoned?: AttemptBeat): Promise<void> {
      if (abandoned) await recordAbandonedAttempt(db, deliveryId, abandonedAttempt(abandoned));
      await failDelivery(db, deliveryId, disableAfter);
    },
  };
};

/** Into the worker's log: the operator learns which project's receivers hold its share of the webhook slots. */
function reportAttemptsHeld(projectId: string, perProject: number): void {
  log.warn(
    `A project's webhook retries hold their share of this worker's attempt slots (${perProject}); its attempts past that wait and are made later.`,
    { projectId, perProject },
  );
}

/** An attempt that never ended, as logged: it ran from its start until it was found abandoned, now. */
function abandonedAttempt(beat: AttemptBeat) {
  return { attempt: beat.attempt, error: ABANDONED_ATTEMPT_ERROR, durationMs: Math.max(0, Date.now() - beat.startedAt) };
}

/**
 * A failed attempt is made again after the delivery's backoff, which it names; the retry policy's own short
 * waits are left to attempts that never ended (a worker that died). Workflows whose attempts do not heartbeat
 * pass no `retryInitialMs`: their retry policy is the backoff.
 */
function retryAfterBackoff(err: unknown, attempt: number, retryInitialMs: number | undefined): unknown {
  if (retryInitialMs === undefined || err instanceof CancelledFailure) return err;
  if (err instanceof ApplicationFailure && err.nonRetryable) return err;
  const failure = err instanceof Error ? err : new Error(String(err));
  return ApplicationFailure.create({
    message: failure.message,
    type: err instanceof ApplicationFailure ? (err.type ?? undefined) : failure.name,
    cause: err instanceof ApplicationFailure ? undefined : failure,
    nextRetryDelay: waitAfterAttempt(retryInitialMs, attempt),
  });
}
