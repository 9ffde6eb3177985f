/**
 * Streamed text arrives a few characters at a time; writing each piece as its own event would cost a
 * transaction per token. Pieces are gathered and written at most every FLUSH_MS (or once
 * FLUSH_CHARS have gathered), in order, one write at a time. Text whose write failed (the database
 * restarting) is kept, ahead of what came after it, for the next write: the deltas a client reads always
 * add up to the text in the end.
 */
const FLUSH_MS = 50;
const FLUSH_CHARS = 2_000;

export class DeltaBatcher {
  private pending = '';
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private failure: unknown = null;

  constructor(private readonly write: (text: string) => Promise<void>) {}

  add(text: string): void {
    if (!text) return;
    this.pending += text;
    if (this.pending.length >= FLUSH_CHARS) this.schedule(0);
    else if (!this.timer) this.schedule(FLUSH_MS);
  }

  /** Writes all that is gathered; rejects with why when some of it could not be written (it is kept). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.drain();
    await this.writing;
    if (this.failure) throw this.failure;
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.drain();
    }, ms);
  }

  /** Queues a write of whatever is gathered when its turn comes. */
  private drain(): void {
    this.writing = this.writing.then(async () => {
      if (!this.pending) return;
      const text = this.pending;
      this.pending = '';
      try {
        await this.write(text);
        this.failure = null;
      } catch (err) {
        this.pending = text + this.pending;
        this.failure = err;
      }
    });
  }
}
