/**
 * How many run event streams this process holds open, per API key and in all. Each open stream holds a
 * socket, a timer and a read of the log whenever its run logs an event, so one key's streams must not take
 * what every tenant's requests share. A stream takes a slot before it begins and gives it back when it ends.
 */
import { RateLimitError } from './errors.js';
import type { Place } from './fair-admission.js';

/** AGENTPLANE_EVENT_STREAMS_*: the caps, and how long a client may leave a stream unread before it is closed. */
export interface EventStreamLimits {
  /** AGENTPLANE_EVENT_STREAMS_PER_KEY: streams one API key holds open on one API process. */
  perKey: number;
  /** AGENTPLANE_EVENT_STREAMS_PER_PROCESS: streams one API process holds open in all. */
  perProcess: number;
  /** AGENTPLANE_EVENT_STREAM_STALL_SECONDS: a client that takes in nothing for this long is disconnected. */
  stallSeconds: number;
}

export const DEFAULT_EVENT_STREAM_LIMITS: EventStreamLimits = { perKey: 20, perProcess: 1000, stallSeconds: 30 };

// Streams are long: a slot frees when one ends, which a client cannot know. It may try again this soon.
const RETRY_AFTER_SECONDS = 10;

export class EventStreamSlots {
  private readonly byKey = new Map<string, number>();
  private total = 0;

  constructor(readonly limits: EventStreamLimits = DEFAULT_EVENT_STREAM_LIMITS) {}

  /** Streams open now on this process. */
  get open(): number {
    return this.total;
  }

  /** A slot for one more stream of `apiKeyId` (in place of its request's `place`), and how to give it back (once is enough; more is harmless); 429 when none is free. */
  take(apiKeyId: string, place?: Place): () => void {
    const held = this.byKey.get(apiKeyId) ?? 0;
    if (held >= this.limits.perKey) {
      throw RateLimitError(
        'too_many_event_streams',
        `This API key already holds ${held} event streams open, its most; close one, or follow runs with fewer streams.`,
        RETRY_AFTER_SECONDS,
      );
    }
    if (this.total >= this.limits.perProcess) {
      throw RateLimitError(
        'event_streams_exhausted',
        'This server holds as many event streams as it serves; try again shortly.',
        RETRY_AFTER_SECONDS,
      );
    }
    this.byKey.set(apiKeyId, held + 1);
    this.total += 1;
    // The stream is bounded by these slots from here on: its request's place in the fair queue is freed.
    place?.leave();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total -= 1;
      const left = (this.byKey.get(apiKeyId) ?? 1) - 1;
      if (left > 0) this.byKey.set(apiKeyId, left);
      else this.byKey.delete(apiKeyId);
    };
  }
}
