/**
 * The queue of keys (`namespace/name`) to reconcile, as controllers need it:
 * - de-duplicated: a key added while it waits is processed once;
 * - one at a time per key: a key being processed is not handed out again; added meanwhile, it comes back
 *   once the first pass is done;
 * - backoff per key after failures (doubling from `baseDelayMs` to `maxDelayMs`, reset on success), and
 *   a global token bucket over those retries, so that many keys failing at once (the platform API down)
 *   come back no faster than `ratePerSecond` together: the later of the two delays wins, as in client-go.
 */
export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Retries per second on average across all keys, and how many at once after a quiet spell. */
  ratePerSecond?: number;
  burst?: number;
}

export class WorkQueue {
  private readonly ready: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  /** Added while processing: requeued when done. */
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private tokens: number;
  private lastRefill = Date.now();
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly ratePerSecond: number;
  private readonly burst: number;

  constructor(options: WorkQueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 200;
    this.maxDelayMs = options.maxDelayMs ?? 300_000;
    this.ratePerSecond = options.ratePerSecond ?? 10;
    this.burst = options.burst ?? 100;
    this.tokens = this.burst;
  }

  /** Keys waiting (ready or delayed), for the queue-depth metric. */
  get depth(): number {
    return this.queued.size + this.timers.size;
  }

  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.ready.push(key);
    this.wake();
  }

  /** Adds the key after `ms` (a later add supersedes nothing: the earliest wins). */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown || this.timers.has(key)) return;
    if (ms <= 0) return this.add(key);
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        this.add(key);
      }, ms),
    );
  }

  /** After a failed pass: back in after this key's next backoff delay, or later if the retry budget is spent. */
  retry(key: string, atLeastMs = 0): number {
    const failures = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, failures);
    const backoff = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (failures - 1));
    const delay = Math.max(backoff, this.reserveToken(), atLeastMs);
    this.addAfter(key, delay);
    return delay;
  }

  /** After a successful pass: the key's backoff starts over. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** The next key to process, waiting for one (and for the rate limit); undefined once shut down. */
  async next(): Promise<string | undefined> {
    for (;;) {
      if (this.shuttingDown) return undefined;
      const key = this.ready.shift();
      if (key !== undefined) {
        this.queued.delete(key);
        this.processing.add(key);
        return key;
      }
      await new Promise<string | undefined>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Marks the key's pass finished; a key added meanwhile is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
  }

  /** Stops handing out keys; pending `next()` calls resolve undefined. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }

  private wake(): void {
    this.waiters.shift()?.('wake');
  }

  /** Takes a token from the bucket, going into debt if need be: how many ms until that token was due. */
  private reserveToken(): number {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.lastRefill) / 1000) * this.ratePerSecond);
    this.lastRefill = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.ratePerSecond) * 1000);
  }
}
