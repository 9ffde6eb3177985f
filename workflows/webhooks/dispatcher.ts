/**
 * Turns the outbox into deliveries, in each shared worker process: recorded events become one delivery per
 * subscribed endpoint, and each delivery not yet started gets its workflow. Woken by a notification when an
 * event or a delivery is recorded (LISTEN, on a connection of its own), and every POLL_MS regardless, so a
 * lost notification or a PostgreSQL or Temporal outage only delays deliveries. Several dispatchers (one
 * per worker) share the work: events are taken with SKIP LOCKED, and a delivery's workflow id is fixed.
 */
import pg from 'pg';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { setTimeout as delay } from 'node:timers/promises';
import type { Db } from '../../records/db.js';
import { dispatchEvents, markDeliveriesStarted, unstartedDeliveries, WEBHOOKS_CHANNEL } from '../../records/webhook-deliveries.js';
import { startDelivery, type WebhookSettings } from './client.js';

const POLL_MS = 2_000;
const BATCH = 200;
// Workflow starts in flight at once: enough to keep up with a burst, few enough not to swamp Temporal.
const STARTS_AT_ONCE = 64;

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
    await Promise.all(this.loops);
  }

  /** One pass: every undispatched event fanned out, every unstarted delivery started. */
  async dispatchOnce(): Promise<void> {
    while ((await dispatchEvents(this.db, BATCH)) === BATCH && !this.stopped);
    for (;;) {
      const ids = await unstartedDeliveries(this.db, BATCH);
      for (let i = 0; i < ids.length; i += STARTS_AT_ONCE) {
        const chunk = ids.slice(i, i + STARTS_AT_ONCE);
        await Promise.all(chunk.map((id) => startDelivery(this.temporal, id, this.settings)));
        await markDeliveriesStarted(this.db, chunk);
      }
      if (ids.length < BATCH || this.stopped) return;
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
