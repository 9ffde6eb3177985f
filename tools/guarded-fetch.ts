/**
 * A `fetch` for the MCP SDK's transport that sends through the network guard (node:http with the guarded
 * lookup) rather than the global fetch: the global one resolves names itself, so a check made before it
 * connects could be answered differently from the lookup it connects with.
 */
import { Readable } from 'node:stream';
import { guardedRequest } from './network-guard.js';

// Statuses whose responses have no body, which a Response must then be given as null.
const BODYLESS = new Set([101, 103, 204, 205, 304]);

export function guardedFetch(allowPrivate: boolean): (input: string | URL, init?: RequestInit) => Promise<Response> {
  return async (input, init = {}) => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const response = await guardedRequest(new URL(input), {
      method: init.method ?? 'GET',
      headers,
      body: requestBody(init.body),
      signal: init.signal ?? new AbortController().signal,
      allowPrivate,
    });
    const responseHeaders = new Headers();
    for (let i = 0; i + 1 < response.rawHeaders.length; i += 2) responseHeaders.append(response.rawHeaders[i]!, response.rawHeaders[i + 1]!);
    const status = response.statusCode ?? 500;
    if (BODYLESS.has(status)) response.destroy();
    const body = BODYLESS.has(status) ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>);
    return new Response(body, { status, statusText: response.statusMessage ?? '', headers: responseHeaders });
  };
}

/** The transport sends JSON text; anything else would be a change in the SDK this module must follow. */
function requestBody(body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  throw new TypeError('only text and byte request bodies are supported');
}
