/**
 * Calls an HTTP tool with the model's arguments. What the model can act on comes back as a result (the
 * body, or an error it can read); what may pass by itself (429, 5xx, a refused or reset connection)
 * throws ToolUnavailableError so that the activity is retried.
 */
import type http from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { compiledSchema } from './argument-schemas.js';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_PARAMETERS,
  DEFAULT_TIMEOUT_MS,
  MAX_RESPONSE_BYTES,
  MAX_TIMEOUT_MS,
  type HttpToolDefinition,
} from './definitions.js';
import { guardedRequest, PrivateTargetError, type Reach } from './network-guard.js';
import { isPassingConnectionFailure, retryAfterMs, ToolUnavailableError, type ToolResult } from './outcomes.js';
import { traceHeaders } from '../tracing/context.js';

const TEXTUAL = /^(text\/|application\/([\w.+-]*\+)?(json|xml)\b|application\/(javascript|x-www-form-urlencoded|x-ndjson|yaml|x-yaml)\b)/i;

export async function callHttpTool(
  def: HttpToolDefinition,
  args: Record<string, unknown>,
  reach: Reach,
  idempotencyKey?: string,
): Promise<ToolResult> {
  const schema = compiledSchema(def.parameters ?? DEFAULT_PARAMETERS);
  // A version stored before these limits applied may hold a schema they refuse: the model is told, nothing is sent.
  if ('problem' in schema) return { content: `The tool cannot be called: its parameters schema ${schema.problem}`, is_error: true };
  const problem = schema.check(args);
  if (problem) return { content: `The arguments do not match the tool's parameters: ${problem}`, is_error: true };

  const method = def.method ?? 'POST';
  const timeoutMs = Math.min(def.timeout_ms ?? DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS);
  const maxBytes = Math.min(def.max_response_bytes ?? DEFAULT_MAX_RESPONSE_BYTES, MAX_RESPONSE_BYTES);
  const url = new URL(def.url);
  const headers: Record<string, string> = {
    'user-agent': 'agentplane',
    accept: 'application/json, text/*;q=0.9, */*;q=0.5',
    ...def.headers,
    // The call's trace goes on to the tool (`traceparent`), when tracing is on.
    ...traceHeaders(),
  };
  if (idempotencyKey) {
    // The call's own key, in place of any the definition sets: every attempt at this call, and only those, carry it.
    for (const name of Object.keys(headers)) if (name.toLowerCase() === 'idempotency-key') delete headers[name];
    headers['idempotency-key'] = idempotencyKey;
  }
  let body: string | undefined;
  if (method === 'GET') {
    for (const [key, value] of Object.entries(args)) appendQuery(url.searchParams, key, value);
  } else {
    body = JSON.stringify(args);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }

  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([reach.signal, timeout]);
  try {
    const response = await guardedRequest(url, {
      projectId: reach.projectId,
      method,
      headers,
      body,
      signal,
      allowPrivate: reach.allowPrivate,
    });
    const status = response.statusCode ?? 0;
    if (status === 429 || status >= 500) {
      response.destroy();
      throw new ToolUnavailableError(`${def.name} answered HTTP ${status}`, retryAfterMs(response.headers['retry-after']));
    }
    const { text, truncated } = await readBounded(response, maxBytes);
    if (status >= 300 && status < 400) {
      return {
        content: `HTTP ${status}: the tool redirected to ${response.headers.location ?? 'another address'}; redirects are not followed`,
        is_error: true,
      };
    }
    const shown = describeBody(response, text, truncated, maxBytes);
    if (status >= 400) return { content: `HTTP ${status}: ${shown}`, is_error: true };
    return { content: shown, is_error: false };
  } catch (err) {
    if (reach.signal.aborted) throw reach.signal.reason;
    if (timeout.aborted) return { content: `${def.name} did not answer within ${timeoutMs} ms`, is_error: true };
    if (err instanceof ToolUnavailableError) throw err;
    if (err instanceof PrivateTargetError) return { content: `The request was refused: ${err.message}`, is_error: true };
    if (isPassingConnectionFailure(err))
      throw new ToolUnavailableError(`${def.name} could not be reached: ${(err as Error).message}`, undefined, { cause: err });
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOTFOUND' || code === 'ENODATA') return { content: `${url.hostname} does not resolve to any address`, is_error: true };
    throw err;
  }
}

/** Scalars as they are, arrays as repeated keys, objects as JSON. */
function appendQuery(params: URLSearchParams, key: string, value: unknown): void {
  if (value === undefined) return;
  if (Array.isArray(value)) for (const item of value) appendQuery(params, key, item);
  else if (value !== null && typeof value === 'object') params.append(key, JSON.stringify(value));
  else params.append(key, String(value));
}

/**
 * The body as text, reading no further than `maxBytes`: a longer body is cut there and its connection
 * closed. A character split by the cut is left out rather than garbled.
 */
async function readBounded(response: http.IncomingMessage, maxBytes: number): Promise<{ text: string; truncated: boolean }> {
  const decoder = new StringDecoder('utf8');
  let text = '';
  let read = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    const room = maxBytes - read;
    text += decoder.write(chunk.length > room ? chunk.subarray(0, room) : chunk);
    read += chunk.length;
    if (read > maxBytes) {
      response.destroy();
      return { text, truncated: true };
    }
  }
  return { text: text + decoder.end(), truncated: false };
}

function describeBody(response: http.IncomingMessage, text: string, truncated: boolean, maxBytes: number): string {
  const type = response.headers['content-type'];
  if (type && !TEXTUAL.test(type)) return `The tool answered with ${type.split(';')[0]} content, which is not text.`;
  if (!truncated) return text;
  return `${text}\n\n[The response was longer than ${maxBytes} bytes; only the first ${maxBytes} bytes are shown.]`;
}
