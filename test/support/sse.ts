/**
 * Reads a Server-Sent Events response as it arrives, the way a browser's EventSource would, and checks
 * every event against the OpenAPI document.
 */
import { assertDocumentedEvent } from './contract.js';

export interface SseEvent {
  id: string | null;
  event: string;
  data: any;
}

export class SseReader {
  readonly events: SseEvent[] = [];
  private buffered = '';
  private waiters: (() => void)[] = [];
  ended = false;
  /** An event the document does not describe: it fails `done` and `next`. */
  private undocumented: Error | null = null;
  readonly done: Promise<void>;

  constructor(
    readonly response: Response,
    private readonly request: { method: string; path: string },
  ) {
    this.done = this.pump().then(() => {
      if (this.undocumented) throw this.undocumented;
    });
  }

  static async open(url: string, init: RequestInit): Promise<SseReader> {
    const response = await fetch(url, init);
    return new SseReader(response, { method: init.method ?? 'GET', path: new URL(url).pathname });
  }

  /** Resolves with the first event (from the start of the stream) that matches, waiting for it to arrive. */
  async next(match: (event: SseEvent) => boolean, timeoutMs = 30_000): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.undocumented) throw this.undocumented;
      const found = this.events.find(match);
      if (found) return found;
      if (this.ended) throw new Error(`the stream ended without the event; saw ${this.events.map((e) => e.event).join(', ')}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching event within ${timeoutMs} ms; saw ${this.events.map((e) => e.event).join(', ')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.response.body as unknown as AsyncIterable<Uint8Array>) {
        this.buffered += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = this.buffered.indexOf('\n\n')) >= 0) {
          const block = this.buffered.slice(0, end);
          this.buffered = this.buffered.slice(end + 2);
          this.parse(block);
        }
        this.wake();
      }
    } catch {
      // Aborted by the test: what arrived is kept.
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private parse(block: string): void {
    let id: string | null = null;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const [field, ...rest] = line.split(':');
      const value = rest.join(':').replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0) return;
    const text = data.join('\n');
    try {
      assertDocumentedEvent(this.request.method, this.request.path, this.response.status, { id, event, data: text });
    } catch (err) {
      this.undocumented ??= err as Error;
    }
    this.events.push({ id, event, data: JSON.parse(text) });
  }

  private wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }
}
