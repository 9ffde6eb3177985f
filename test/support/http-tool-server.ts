/**
 * An HTTP tool on loopback: `/echo` answers with what it received, `/status/<code>` with that status
 * (`retry-after` from the query), `/bytes/<n>` with n bytes of text, `/nul` with text holding a NUL byte, `/picture` with a PNG, `/redirect`
 * with a 302, `/hang` never answers (its requests are counted, so a test can wait for one to arrive),
 * `/held` answers as `/echo` does once the test releases it, and `/unavailable/<n>` answers 503 to its first
 * n requests, then as `/echo` does.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EchoedRequest {
  method: string;
  path: string;
  query: Record<string, string[]>;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface TestToolServer {
  url: string;
  /** Requests to `/hang` that have arrived. */
  hanging: number;
  /** The path of every request received, oldest first. */
  received: string[];
  /** The `Idempotency-Key` of each of `received`, in the same order. */
  keys: (string | undefined)[];
  /** The W3C `traceparent` of each of `received`, in the same order. */
  traceparents: (string | undefined)[];
  /** Requests to `/held` waiting to be answered. */
  held: number;
  /** Answers every request to `/held` that is waiting; how many there were. */
  releaseHeld(): number;
  close(): Promise<void>;
}

export async function startToolServer(): Promise<TestToolServer> {
  const state = { hanging: 0 };
  const received: string[] = [];
  const keys: (string | undefined)[] = [];
  const traceparents: (string | undefined)[] = [];
  let held: (() => void)[] = [];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    received.push(url.pathname);
    keys.push(req.headers['idempotency-key'] as string | undefined);
    traceparents.push(req.headers.traceparent as string | undefined);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const [, route, arg] = url.pathname.split('/');
    const unavailable = route === 'unavailable' && received.filter((path) => path === url.pathname).length <= Number(arg);
    if (unavailable) {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('unavailable on purpose');
    } else if (route === 'echo' || route === 'unavailable' || route === 'held') {
      const query: Record<string, string[]> = {};
      for (const key of new Set(url.searchParams.keys())) query[key] = url.searchParams.getAll(key);
      const echoed: EchoedRequest = { method: req.method ?? '', path: url.pathname, query, headers: req.headers, body };
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(echoed));
      if (route === 'held') held.push(answer);
      else answer();
    } else if (route === 'status') {
      const retryAfter = url.searchParams.get('retry-after');
      res
        .writeHead(Number(arg), { 'content-type': 'text/plain', ...(retryAfter ? { 'retry-after': retryAfter } : {}) })
        .end(`status ${arg} on purpose`);
    } else if (route === 'bytes') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('é'.repeat(Number(arg) / 2));
    } else if (route === 'nul') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('before\u0000after');
    } else if (route === 'picture') {
      res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from('89504e470d0a1a0a', 'hex'));
    } else if (route === 'redirect') {
      res.writeHead(302, { location: '/echo' }).end();
    } else if (route === 'hang') {
      state.hanging++;
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such route');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get hanging() {
      return state.hanging;
    },
    get held() {
      return held.length;
    },
    received,
    keys,
    traceparents,
    releaseHeld() {
      const waiting = held;
      held = [];
      for (const answer of waiting) answer();
      return waiting.length;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
