/**
 * A webhook receiver on loopback: it keeps every request it gets and answers with the statuses the test
 * queues (then 204), so a test can make it fail a few times and recover, or keep failing.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status it was answered; 0 for a request left hanging. */
  answered: number;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** The next requests to `path` answer these statuses, in order; `always` answers every one with it. */
  answer(path: string, statuses: number[] | { always: number }): void;
  /** A redirect answer's target for `path`. */
  redirect(path: string, location: string): void;
  /**
   * Requests to `path` wait, unanswered, until the returned function is called; `waiting()` counts them.
   * `firstAnswered`: the first request of each event to each URL (its first attempt) is answered this at once.
   */
  hold(path: string, options?: { firstAnswered?: number }): { waiting(): number; release(): void };
  /** The `nth` request to `path` (from 1) is read and never answered, as by a receiver that hangs; kept as it comes. */
  hang(path: string, nth: number): void;
  /** The requests to `path`. */
  to(path: string): ReceivedWebhook[];
  close(): Promise<void>;
}

/** Listens on `port` when given (a receiver that comes up where one was down), else on any free port. */
export async function startWebhookReceiver(port = 0): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const queued = new Map<string, number[]>();
  const always = new Map<string, number>();
  const redirects = new Map<string, string>();
  const holds = new Map<string, { waiting: number; released: Promise<void>; release(): void }>();
  const hangs = new Map<string, number>();
  const arrivals = new Map<string, number>();
  const firstAnswered = new Map<string, number>();
  const seen = new Set<string>();
  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const nth = (arrivals.get(path) ?? 0) + 1;
    arrivals.set(path, nth);
    if (hangs.get(path) === nth) {
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered: 0 });
      return;
    }
    // Each event's first request to each URL, where the test asked for it to be answered at once.
    const first = `${req.headers['webhook-id']} ${req.url}`;
    const answeredFirst = firstAnswered.has(path) && !seen.has(first);
    seen.add(first);
    const held = answeredFirst ? undefined : holds.get(path);
    if (held) {
      held.waiting++;
      await held.released;
    }
    const status = answeredFirst ? firstAnswered.get(path)! : (queued.get(path)?.shift() ?? always.get(path) ?? 204);
    received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered: status });
    res.writeHead(status, redirects.has(path) ? { location: redirects.get(path) } : {}).end(status >= 400 ? 'not today' : undefined);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answer(path, statuses) {
      if (Array.isArray(statuses)) queued.set(path, [...statuses]);
      else always.set(path, statuses.always);
    },
    redirect(path, location) {
      redirects.set(path, location);
    },
    hold(path, options = {}) {
      if (options.firstAnswered) firstAnswered.set(path, options.firstAnswered);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const held = { waiting: 0, released, release };
      holds.set(path, held);
      return {
        waiting: () => held.waiting,
        release: () => {
          holds.delete(path);
          release();
        },
      };
    },
    hang(path, nth) {
      hangs.set(path, nth);
    },
    to: (path) => received.filter((r) => r.path === path),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
