/**
 * What the loopback model servers share: a plain node:http server that records each request body and
 * answers from a FIFO queue of scripted replies (or a fallback), and that can hold a reply open until
 * the client goes away. Each provider module speaks its own wire format on top of it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedReply {
  /** Streamed as separate chunks, in this order. */
  text?: string[];
  /** Called in parallel, in this order, after the text. */
  tool_calls?: { name: string; arguments: string }[];
  /** Total input tokens (cached ones included), output tokens, and input tokens served from the cache. */
  usage?: { input: number; output: number; cached?: number };
  /**
   * How tool calls' deltas are numbered, for servers that speak the format loosely: `gemini` as Gemini's
   * OpenAI-compatible endpoint streams them (no `index`; each call's id in its first delta; `finish_reason`
   * `stop`), `index_zero` as proxies that number every call 0. OpenAI's own numbering when absent.
   */
  tool_call_deltas?: 'gemini' | 'index_zero';
  /**
   * Each tool call's first delta carries Gemini's thought signature (`extra_content`): `signature-<n>` for the nth
   * call, or the nth of those given.
   */
  thought_signatures?: true | string[];
  /** The usage object exactly as sent, in the provider's own field names, for a server that reports it loosely. */
  raw_usage?: Record<string, unknown>;
  /** Answer with this error status and the provider's error body instead. */
  status?: number;
  /** Seconds, sent as Retry-After with an error status. */
  retry_after?: number;
  /** Stream the text, then hold the response open until the client disconnects. */
  hang?: boolean;
  /** Stream the first `chunks` text chunks, then wait for `until` before streaming the rest of the reply. */
  pause?: { chunks: number; until: Promise<unknown> };
  /** Answer only a request for this model. */
  model?: string;
}

/** A reply chosen from the request itself, as a model answers what it is sent. */
export type ReplyRule = (body: Record<string, unknown>) => ScriptedReply;

export interface ModelServer {
  /** The base URL the provider's SDK takes (OpenAI: ending in /v1). */
  url: string;
  /** Every request body received, parsed, oldest first. */
  requests: Record<string, unknown>[];
  /** When each of `requests` arrived (Date.now()), in the same order. */
  arrivals: number[];
  enqueue(reply: ScriptedReply): void;
  /** What to answer when no queued reply fits (a rule: whatever it makes of the request); null answers 500 "no reply scripted". */
  setFallback(reply: ScriptedReply | ReplyRule | null): void;
  /** How many held (`hang`) responses their clients have closed. */
  readonly abortedCount: number;
  /** Resolves once every response held so far has been closed by its client. */
  aborted(): Promise<void>;
  stop(): Promise<void>;
}

export interface Exchange {
  method: string;
  path: string;
  body: Record<string, unknown>;
  res: ServerResponse;
  /** The reply scripted for this request's model, taken off the queue; the fallback; or undefined. */
  takeReply(): ScriptedReply | undefined;
  /** Keeps the response open, counting it as aborted when the client closes it. */
  hold(): void;
}

export type ExchangeHandler = (exchange: Exchange) => void;

async function bodyOf(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return {};
  const parsed: unknown = JSON.parse(text);
  return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
}

export async function startScriptedServer(handle: ExchangeHandler, options: { port?: number; path?: string } = {}): Promise<ModelServer> {
  const requests: Record<string, unknown>[] = [];
  const arrivals: number[] = [];
  const queue: ScriptedReply[] = [];
  let fallback: ScriptedReply | ReplyRule | null = null;
  let held = 0;
  let abortedCount = 0;
  let waiters: (() => void)[] = [];
  const settle = () => {
    if (abortedCount < held) return;
    for (const resolve of waiters) resolve();
    waiters = [];
  };

  const server = createServer((req, res) => {
    bodyOf(req).then(
      (body) => {
        if (req.method === 'POST') {
          requests.push(body);
          arrivals.push(Date.now());
        }
        const model = typeof body.model === 'string' ? body.model : undefined;
        handle({
          method: req.method ?? 'GET',
          path: new URL(req.url ?? '/', 'http://loopback').pathname,
          body,
          res,
          takeReply() {
            const index = queue.findIndex((reply) => reply.model === undefined || reply.model === model);
            if (index >= 0) return queue.splice(index, 1)[0];
            if (typeof fallback === 'function') return fallback(body);
            return fallback && (fallback.model === undefined || fallback.model === model) ? fallback : undefined;
          },
          hold() {
            held += 1;
            res.on('close', () => {
              abortedCount += 1;
              settle();
            });
          },
        });
      },
      () => {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"the body is not JSON"}}');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${options.path ?? ''}`,
    requests,
    arrivals,
    enqueue: (reply) => void queue.push(reply),
    setFallback: (reply) => void (fallback = reply),
    get abortedCount() {
      return abortedCount;
    },
    aborted: () =>
      new Promise<void>((resolve) => {
        waiters.push(resolve);
        settle();
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Writes one server-sent event; `event` is omitted for OpenAI, which sends bare `data:` lines. */
export function sendEvent(res: ServerResponse, data: unknown, event?: string): void {
  res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}

/**
 * Streams the reply's text chunks through `send`; a paused reply stops after its first chunks until it is
 * released. False when the client went away meanwhile: nothing more is to be written.
 */
export async function streamText(exchange: Exchange, reply: ScriptedReply, send: (text: string) => void): Promise<boolean> {
  const text = reply.text ?? [];
  const before = reply.pause ? text.slice(0, reply.pause.chunks) : text;
  for (const piece of before) send(piece);
  if (!reply.pause) return true;
  await reply.pause.until;
  if (exchange.res.destroyed) return false;
  for (const piece of text.slice(reply.pause.chunks)) send(piece);
  return true;
}

/** Splits a tool call's arguments in two, so that clients must assemble them from pieces. */
export function halves(text: string): string[] {
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)].filter(Boolean);
}

export const randomId = (length = 24) =>
  Array.from({ length }, () => 'abcdefghijklmnopqrstuvwxyz0123456789'[Math.floor(Math.random() * 36)]).join('');
