/**
 * Wakes whoever waits on a run when its log grows: one LISTEN connection per process, outside the pool.
 * While that connection is down (PostgreSQL restarting) waiters still wake on their own every
 * POLL_MS and read the log, so a stream never stalls for long and nothing is missed: the log, not the
 * notification, is what is read.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { setTimeout as delay } from 'node:timers/promises';
import { notifiedEvent, RUN_EVENTS_CHANNEL } from './run-events.js';

const POLL_MS = 2_000;
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 10_000;

/** Which of a run's events wake a waiter: any, or only those of these types. */
export type WakeOn = 'any' | ReadonlySet<string>;

interface Waiter {
  wakeOn: WakeOn;
  wake(): void;
}

export class RunEventFeed {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private client: pg.Client | null = null;
  private stopped = false;
  private running: Promise<void> | null = null;
  private readonly stopping = new AbortController();
  /**
   * Aborts when the feed stops (the process is stopping): a stream following a run that is still going
   * ends then, rather than hold the server open, and its client resumes it from another replica.
   */
  readonly closing: AbortSignal = this.stopping.signal;

  constructor(
    private readonly connectionString: string,
    private readonly log: Pick<Logger, 'warn' | 'info'>,
  ) {}

  start(): this {
    this.running ??= this.keepListening();
    return this;
  }

  /**
   * Resolves when the run's log may have grown by an event `wakeOn` names, after at most `ms` (or
   * POLL_MS), or when `signal` aborts.
   */
  async wait(runId: string, ms: number, signal?: AbortSignal, wakeOn: WakeOn = 'any'): Promise<void> {
    if (this.stopped) return;
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const waiter = { wakeOn, wake };
    const set = this.waiters.get(runId) ?? new Set();
    set.add(waiter);
    this.waiters.set(runId, set);
    const timer = setTimeout(wake, Math.max(0, Math.min(ms, POLL_MS)));
    const onAbort = () => wake();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await woken;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      set.delete(waiter);
      if (set.size === 0) this.waiters.delete(runId);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    await this.client?.end().catch(() => {});
    for (const set of this.waiters.values()) for (const waiter of set) waiter.wake();
    await this.running;
  }

  private async keepListening(): Promise<void> {
    let backoff = RECONNECT_MIN_MS;
    while (!this.stopped) {
      const client = new pg.Client({ connectionString: this.connectionString });
      try {
        const ended = new Promise<void>((resolve) => {
          client.on('error', () => resolve());
          client.on('end', () => resolve());
        });
        client.on('notification', (message) => {
          const { runId, type } = notifiedEvent(message.payload ?? '');
          for (const waiter of this.waiters.get(runId) ?? []) {
            if (waiter.wakeOn === 'any' || type === null || waiter.wakeOn.has(type)) waiter.wake();
          }
        });
        await client.connect();
        this.client = client;
        await client.query(`LISTEN ${RUN_EVENTS_CHANNEL}`);
        backoff = RECONNECT_MIN_MS;
        await ended;
      } catch (err) {
        if (!this.stopped) this.log.warn({ err }, 'run event notifications unavailable; streams poll until they return');
      } finally {
        this.client = null;
        await client.end().catch(() => {});
      }
      if (this.stopped) break;
      await delay(backoff);
      backoff = Math.min(backoff * 2, RECONNECT_MAX_MS);
    }
  }
}
