/**
 * Wakes whoever follows a run when its log grows: one LISTEN connection per process, outside the pool.
 * While it listens, a follower sleeps until a notification (or its own deadline) and costs the database
 * nothing meanwhile. While that connection is down (PostgreSQL restarting) followers wake on their own
 * every POLL_MS and read the log, so a stream never stalls for long and nothing is missed: the log, not
 * the notification, is what is read.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { setTimeout as delay } from 'node:timers/promises';
import { notifiedEvent, RUN_EVENTS_CHANNEL } from './run-events.js';

const POLL_MS = 2_000;
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 10_000;

/** Which of a run's events wake a follower: any, or only those of these types. */
export type WakeOn = 'any' | ReadonlySet<string>;

/**
 * Interest in one run's log, taken before its reader first reads it: a notification that arrives while
 * the reader is busy reading is kept, so the next wait returns at once and nothing slips between a read
 * and the wait after it.
 */
export class RunFollower {
  private pending = false;
  private wakeNow: (() => void) | null = null;

  constructor(
    readonly wakeOn: WakeOn,
    private readonly feed: RunEventFeed,
    private readonly detach: () => void,
  ) {}

  /** The feed: the log may have grown (or the feed changed state, and the reader should look). */
  notify(): void {
    this.pending = true;
    this.wakeNow?.();
  }

  /**
   * Waits until the log may have grown since the last call (at once if it already has), `ms` have passed,
   * or `signal` aborts. True when the reader should read the log: woken, or the feed is not listening
   * (so the wait was a poll); false when the time ran out with nothing to read.
   */
  async next(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (!this.pending && !this.feed.stopped && !signal?.aborted) {
      const listening = this.feed.listening;
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      await new Promise<void>((resolve) => {
        this.wakeNow = resolve;
        onAbort = resolve;
        timer = setTimeout(resolve, Math.max(0, listening ? ms : Math.min(ms, POLL_MS)));
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort!);
      this.wakeNow = null;
      if (!this.pending && listening && this.feed.listening) return false;
    }
    this.pending = false;
    return true;
  }

  close(): void {
    this.wakeNow?.();
    this.detach();
  }
}

export class RunEventFeed {
  private readonly followers = new Map<string, Set<RunFollower>>();
  private client: pg.Client | null = null;
  private isStopped = false;
  private isListening = false;
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

  get stopped(): boolean {
    return this.isStopped;
  }

  /** Whether notifications arrive: followers then sleep until one does, rather than poll. */
  get listening(): boolean {
    return this.isListening;
  }

  start(): this {
    this.running ??= this.keepListening();
    return this;
  }

  /** Follows a run's log until `close()`; see RunFollower. */
  follow(runId: string, wakeOn: WakeOn = 'any'): RunFollower {
    const set = this.followers.get(runId) ?? new Set();
    const follower = new RunFollower(wakeOn, this, () => {
      set.delete(follower);
      if (set.size === 0 && this.followers.get(runId) === set) this.followers.delete(runId);
    });
    set.add(follower);
    this.followers.set(runId, set);
    return follower;
  }

  /** Everyone looks again: the feed started or stopped listening, or is stopping. */
  private notifyAll(): void {
    for (const set of this.followers.values()) for (const follower of set) follower.notify();
  }

  async stop(): Promise<void> {
    this.isStopped = true;
    this.stopping.abort();
    await this.client?.end().catch(() => {});
    this.notifyAll();
    await this.running;
  }

  private async keepListening(): Promise<void> {
    let backoff = RECONNECT_MIN_MS;
    while (!this.isStopped) {
      const client = new pg.Client({ connectionString: this.connectionString });
      // A stop while the connection is still being made finds no client to end: it ends the wait here instead.
      let onStop = () => {};
      try {
        const ended = new Promise<void>((resolve) => {
          client.on('error', () => resolve());
          client.on('end', () => resolve());
          onStop = () => resolve();
          this.stopping.signal.addEventListener('abort', onStop, { once: true });
        });
        client.on('notification', (message) => {
          const { runId, type } = notifiedEvent(message.payload ?? '');
          for (const follower of this.followers.get(runId) ?? []) {
            if (follower.wakeOn === 'any' || type === null || follower.wakeOn.has(type)) follower.notify();
          }
        });
        await client.connect();
        this.client = client;
        await client.query(`LISTEN ${RUN_EVENTS_CHANNEL}`);
        // What was logged before LISTEN took effect was not notified: everyone reads once more.
        this.isListening = true;
        this.notifyAll();
        backoff = RECONNECT_MIN_MS;
        await ended;
      } catch (err) {
        if (!this.isStopped) this.log.warn({ err }, 'run event notifications unavailable; streams poll until they return');
      } finally {
        this.stopping.signal.removeEventListener('abort', onStop);
        // Followers asleep until a notification would sleep through the outage: they poll until it is over.
        if (this.isListening) {
          this.isListening = false;
          this.notifyAll();
        }
        this.client = null;
        await client.end().catch(() => {});
      }
      if (this.isStopped) break;
      await delay(backoff);
      backoff = Math.min(backoff * 2, RECONNECT_MAX_MS);
    }
  }
}
