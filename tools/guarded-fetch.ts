/**
 * A `fetch` for the MCP SDK's transport that sends through the network guard (node:http with the guarded
 * lookup) rather than the global fetch: the global one resolves names itself, so a check made before it
 * connects could be answered differently from the lookup it connects with.
 */
import { pipeline, Readable, Transform } from 'node:stream';
import { guardedRequest } from './network-guard.js';

/** A response body that went on past what the caller said it would read. */
export class ResponseTooLargeError extends Error {
  readonly code = 'ERR_RESPONSE_TOO_LARGE';

  constructor(readonly maxBytes: number) {
    super(`the answer was longer than ${maxBytes} bytes`);
    this.name = 'ResponseTooLargeError';
  }
}

// Statuses whose responses have no body, which a Response must then be given as null.
const BODYLESS = new Set([101, 103, 204, 205, 304]);

export interface FetchLimits {
  projectId: string;
  allowPrivate: boolean;
  /** Bytes of one response body. */
  maxResponseBytes: number;
  /** Bytes of every response body this fetch reads, together; unbounded (each response bounded) when absent. */
  maxTotalBytes?: number;
}

/**
 * Each response body ends in ResponseTooLargeError past `maxResponseBytes`, and every body past
 * `maxTotalBytes` read in all, so no server can fill the memory.
 */
export function guardedFetch({
  projectId,
  allowPrivate,
  maxResponseBytes,
  maxTotalBytes = Infinity,
}: FetchLimits): (input: string | URL, init?: RequestInit) => Promise<Response> {
  const total = { read: 0, max: maxTotalBytes };
  return async (input, init = {}) => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const response = await guardedRequest(new URL(input), {
      projectId,
      method: init.method ?? 'GET',
      headers,
      body: requestBody(init.body),
      signal: init.signal ?? new AbortController().signal,
      allowPrivate,
    });
    const responseHeaders = new Headers();
    for (let i = 0; i + 1 < response.rawHeaders.length; i += 2)
      responseHeaders.append(response.rawHeaders[i]!, response.rawHeaders[i + 1]!);
    const status = response.statusCode ?? 500;
    if (BODYLESS.has(status)) response.destroy();
    const body = BODYLESS.has(status) ? null : (Readable.toWeb(bounded(response, maxResponseBytes, total)) as ReadableStream<Uint8Array>);
    return new Response(body, { status, statusText: response.statusMessage ?? '', headers: responseHeaders });
  };
}

function bounded(body: Readable, maxBytes: number, total: { read: number; max: number }): Readable {
  let read = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      read += chunk.length;
      total.read += chunk.length;
      if (read > maxBytes) return done(new ResponseTooLargeError(maxBytes));
      done(total.read > total.max ? new ResponseTooLargeError(total.max) : null, chunk);
    },
  });
  // Either side failing destroys the other: the connection closes once the limit is passed.
  return pipeline(body, limit, () => undefined);
}

/** The transport sends JSON text; anything else would be a change in the SDK this module must follow. */
function requestBody(body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  throw new TypeError('only text and byte request bodies are supported');
}
