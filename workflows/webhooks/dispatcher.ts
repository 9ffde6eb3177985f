/**
 * Turns the outbox into deliveries, in each shared worker process: recorded events become one delivery per
 * subscribed endpoint, and each delivery gets its first attempt from here at once; only one that fails it
 * gets a workflow for its retries. Woken by a notification when a delivery, or an event that an enabled
 * endpoint subscribes to, is recorded (LISTEN, on a connection of its own), when an attempt ends, and every
 * POLL_MS regardless, so a lost notification or a PostgreSQL or Temporal outage only delays deliveries; the
 * events no endpoint takes are marked dispatched by that poll, many at once. Several dispatchers (one per
 * worker) share the work: events and deliveries are claimed with SKIP LOCKED, and a delivery's workflow id
 * is fixed. A dispatcher that dies mid-attempt leaves its claim to expire, and another makes the attempt
 * again: at least once, deduplicable by the event's id.
 */
import pg from 'pg';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { setTimeout as delay } from 'node:timers/promises';
import type { Db } from '../../records/db.js';
import {
  claimFirstAttempts,
  dispatchEvents,
  failDelivery,
  markDeliveriesStarted,
  recordAttempt,
  releaseClaims,
  unstartedRetries,
  WEBHOOKS_CHANNEL,
  type DeliveryTarget,
} from '../../records/webhook-deliveries.js';
import { startRetries, type WebhookSettings } from './client.js';
import { postEvent } from './send.js';
import { outlastDatabaseOutage, type OutageWaiter } from '../database-outage.js';

const POLL_MS = 2_000;
const BATCH = 200;
// Workflow starts in flight at once: enough to keep up with a burst, few enough not to swamp Temporal.
const STARTS_AT_ONCE = 64;
/** First attempts in flight at once in this process, and of them for one project: a slow host holds only its project's. */
const ATTEMPTS_AT_ONCE = 128;
export const ATTEMPTS_AT_ONCE_PER_PROJECT = 16;

export class WebhookDispatcher {
  private stopped = false;
  private wake: () => void = () => {};
  private pending = false;
  private listener: pg.Client | null = null;
  private loops: Promise<void>[] = [];
  private stopRequested: () => void = () => {};
  /**
   * Settles on stop(). The listening connection's steps are raced against it: a pg client ended while it
   * connects may never settle its connect(), and stopping must not wait on it.
   */
  private readonly stopping = new Promise<void>((resolve) => (this.stopRequested = resolve));
  /** Aborts the attempts in flight when the dispatcher stops: their claims are given back, and they are made again. */
  private readonly abandon = new AbortController();
  private readonly attempts = new Set<Promise<void>>();
  /** Deliveries whose attempt the stop cut short, given back as it ends. */
  private readonly abandoned: string[] = [];
  private readonly attemptsOfProject = new Map<string, number>();
  private attemptFailing = false;
  /** How an attempt's logging waits out a database outage, until the dispatcher stops. */
  private readonly outageWaits: OutageWaiter = {
    log: {
      info: (message) => this.log.info(message),
      warn: (message, attributes) => this.log.warn(attributes ?? {}, message),
    },
    cancellationSignal: this.abandon.signal,
  };
  /** The last claim began attempts: more deliveries may be waiting for one of them to end. */
  private backlog = false;
  /** Claims are made one after another, so that two never count the same room. */
  private claims: Promise<void> = Promise.resolve();
  private claimAgain = false;

  constructor(
    private readonly db: Db,
    private readonly temporal: Client,
    private readonly settings: WebhookSettings,
    private readonly log: Pick<Logger, 'warn' | 'info'>,
  ) {}

  start(): this {
    this.loops = [this.dispatchLoop(), this.listenLoop()];
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopRequested();
    this.wake();
    this.listener?.end().catch(() => {});
    this.abandon.abort();
    await Promise.all([...this.loops, ...this.attempts]);
    // Given back for the other dispatchers at once, rather than when the claims expire; unreachable, they expire.
    if (this.abandoned.length > 0) await releaseClaims(this.db, this.abandoned).catch(() => undefined);
  }

  /**
   * One pass: every undispatched event fanned out, as many deliveries' first attempts begun as there is room
   * for (not awaited), every delivery that failed its first attempt given its retries' workflow.
   */
  async dispatchOnce(): Promise<void> {
    while ((await dispatchEvents(this.db, BATCH)) === BATCH && !this.stopped);
    await this.claimForRoom();
    for (;;) {
      const unstarted = await unstartedRetries(this.db, BATCH);
      for (let i = 0; i < unstarted.length; i += STARTS_AT_ONCE) {
        const chunk = unstarted.slice(i, i + STARTS_AT_ONCE);
        await Promise.all(chunk.map(({ attempts, ...delivery }) => startRetries(this.temporal, delivery, this.settings, attempts)));
        await markDeliveriesStarted(
          this.db,
          chunk.map(({ id }) => id),
        );
      }
      if (unstarted.length < BATCH || this.stopped) return;
    }
  }

  /**
   * Claims again as soon as the claim in progress is done: a pass calls it, and so does every attempt that
   * ends while deliveries wait, without the rest of a pass.
   */
  private claimForRoom(): Promise<void> {
    if (this.claimAgain) return this.claims;
    this.claimAgain = true;
    this.claims = this.claims
      .catch(() => {})
      .then(() => {
        this.claimAgain = false;
        return this.beginFirstAttempts();
      });
    return this.claims;
  }

  /** Claims deliveries for the room left, each project's within its own, and begins their attempts. */
  private async beginFirstAttempts(): Promise<void> {
    while (!this.stopped && this.attempts.size < ATTEMPTS_AT_ONCE) {
      const room = ATTEMPTS_AT_ONCE - this.attempts.size;
      const roomOf = new Map([...this.attemptsOfProject].map(([project, n]) => [project, ATTEMPTS_AT_ONCE_PER_PROJECT - n]));
      const claimed = await claimFirstAttempts(this.db, room, ATTEMPTS_AT_ONCE_PER_PROJECT, roomOf);
      for (const target of claimed) this.begin(target);
      // Whatever a project could not begin now waits for one of its attempts to end: an end calls for a pass.
      this.backlog = claimed.length > 0;
      if (claimed.length < room) return;
    }
  }

  private begin(target: DeliveryTarget): void {
    const project = target.endpoint.project_id;
    this.attemptsOfProject.set(project, (this.attemptsOfProject.get(project) ?? 0) + 1);
    const attempt = this.firstAttempt(target).finally(() => {
      this.attempts.delete(attempt);
      const left = (this.attemptsOfProject.get(project) ?? 1) - 1;
      if (left > 0) this.attemptsOfProject.set(project, left);
      else this.attemptsOfProject.delete(project);
      // A claim that fails here is left to the next pass, which reports it.
      if (this.backlog && !this.stopped) this.claimForRoom().catch(() => {});
    });
    this.attempts.add(attempt);
  }

  /** Posts a claimed delivery's event; a failed attempt is logged and the delivery handed to its retries' workflow. */
  private async firstAttempt(target: DeliveryTarget): Promise<void> {
    const deliveryId = target.delivery.id;
    try {
      if (target.endpoint.status !== 'enabled') {
        await failDelivery(this.db, deliveryId, this.settings.disableAfter);
        return;
      }
      const sent = await postEvent(target, this.settings.allowPrivate, this.abandon.signal);
      // Stopped mid-attempt: nothing is logged, and the delivery is given back to be made again.
      if (this.stopped) {
        this.abandoned.push(deliveryId);
        return;
      }
      const outcome = { attempt: 1, responseStatus: sent.responseStatus, error: sent.error, durationMs: sent.durationMs };
      // The attempt was made: it is logged once the database answers, and not made again for it. False: the
      // endpoint was deleted meanwhile, and the delivery with it.
      const logged = await outlastDatabaseOutage(this.outageWaits, () => recordAttempt(this.db, deliveryId, outcome, sent.delivered));
      if (this.attemptFailing) this.log.info('webhook attempts are recorded again');
      this.attemptFailing = false;
      if (!logged || sent.delivered) return;
      if (this.settings.maxAttempts <= 1) {
        await failDelivery(this.db, deliveryId, this.settings.disableAfter);
        return;
      }
      await startRetries(this.temporal, { id: deliveryId, projectId: target.endpoint.project_id }, this.settings, 1);
      await markDeliveriesStarted(this.db, [deliveryId]);
    } catch (err) {
      // Left as it stands: the claim expires (no attempt logged) or the next pass starts the retries.
      if (!this.attemptFailing) this.log.warn({ err, deliveryId }, 'a webhook attempt could not be recorded or handed on; retrying');
      this.attemptFailing = true;
    }
  }

  private async dispatchLoop(): Promise<void> {
    let failing = false;
    while (!this.stopped) {
      this.pending = false;
      try {
        await this.dispatchOnce();
        if (failing) this.log.info('webhook deliveries are dispatched again');
        failing = false;
      } catch (err) {
        if (!failing) this.log.warn({ err }, 'webhook deliveries cannot be dispatched now; retrying');
        failing = true;
      }
      if (this.stopped) break;
      // A notification that came during the pass calls for another at once.
      if (this.pending) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  private async listenLoop(): Promise<void> {
    let backoff = 500;
    while (!this.stopped) {
      const client = new pg.Client({ connectionString: this.db.connectionString });
      try {
        const ended = new Promise<void>((resolve) => {
          client.on('error', () => resolve());
          client.on('end', () => resolve());
        });
        client.on('notification', () => {
          this.pending = true;
          this.wake();
        });
        // Known before it connects: a stop() that comes while it connects ends it too.
        this.listener = client;
        await Promise.race([client.connect(), this.stopping]);
        if (this.stopped) break;
        await Promise.race([client.query(`LISTEN ${WEBHOOKS_CHANNEL}`), this.stopping]);
        if (this.stopped) break;
        backoff = 500;
        // Anything recorded while not listening is found by the pass this starts.
        this.wake();
        await Promise.race([ended, this.stopping]);
      } catch {
        // The dispatch loop polls meanwhile and reports the outage.
      } finally {
        this.listener = null;
        // Its socket is closed at once; what pg does after is not waited for (see `stopping`).
        client.end().catch(() => {});
      }
      if (this.stopped) break;
      await delay(backoff);
      backoff = Math.min(backoff * 2, 10_000);
    }
  }
}
