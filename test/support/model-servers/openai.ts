/**
 * A loopback server speaking OpenAI's Chat Completions wire format: `POST /v1/chat/completions` streamed
 * as OpenAI streams it (`data:` chunks, a usage chunk with no choices, `data: [DONE]`), errors with
 * OpenAI's error body, and `GET /v1/models`.
 */
import type { ServerResponse } from 'node:http';
import {
  halves,
  randomId,
  sendEvent,
  startScriptedServer,
  streamText,
  type Exchange,
  type ModelServer,
  type ScriptedReply,
} from './scripted-server.js';

export type { ModelServer, ScriptedReply } from './scripted-server.js';

export interface OpenAiServer extends ModelServer {
  /** Replaces the names `GET /v1/models` lists. */
  setModels(names: string[]): void;
}

const ERRORS: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: 'invalid_request_error', code: null, message: "Invalid value for 'max_completion_tokens': must be a positive integer." },
  401: {
    type: 'invalid_request_error',
    code: 'invalid_api_key',
    message: 'Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.',
  },
  403: {
    type: 'invalid_request_error',
    code: 'unsupported_country_region_territory',
    message: 'Country, region, or territory not supported',
  },
  404: { type: 'invalid_request_error', code: 'model_not_found', message: 'The model does not exist or you do not have access to it.' },
  429: {
    type: 'requests',
    code: 'rate_limit_exceeded',
    message: 'Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.',
  },
};
const SERVER_ERROR = {
  type: 'server_error',
  code: null,
  message: 'The server had an error while processing your request. Sorry about that!',
};

function sendError(res: ServerResponse, status: number, retryAfter?: number, message?: string): void {
  const error = ERRORS[status] ?? SERVER_ERROR;
  res.writeHead(status, {
    'content-type': 'application/json',
    'x-request-id': `req_${randomId(32)}`,
    ...(retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) }),
  });
  res.end(JSON.stringify({ error: { message: message ?? error.message, type: error.type, param: null, code: error.code } }));
}

async function streamReply(exchange: Exchange, reply: ScriptedReply): Promise<void> {
  const { res, body } = exchange;
  const id = `chatcmpl-${randomId(29)}`;
  const model = typeof body.model === 'string' ? body.model : 'unknown';
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) =>
    sendEvent(res, {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: 'fp_loopback',
      choices: [{ index: 0, delta, logprobs: null, finish_reason }],
      usage: null,
    });

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-request-id': `req_${randomId(32)}`,
  });
  chunk({ role: 'assistant', content: '', refusal: null });
  if (!(await streamText(exchange, reply, (content) => chunk({ content })))) return;
  if (reply.hang) return exchange.hold();

  const numbered = (index: number) =>
    reply.tool_call_deltas === 'gemini' ? {} : { index: reply.tool_call_deltas === 'index_zero' ? 0 : index };
  (reply.tool_calls ?? []).forEach((call, index) => {
    const id = `call_${randomId(24)}`;
    const signature = reply.thought_signatures === true ? `signature-${index}` : reply.thought_signatures?.[index];
    const signed = signature === undefined ? {} : { extra_content: { google: { thought_signature: signature } } };
    chunk({ tool_calls: [{ ...numbered(index), id, type: 'function', function: { name: call.name, arguments: '' }, ...signed }] });
    for (const piece of halves(call.arguments)) chunk({ tool_calls: [{ ...numbered(index), function: { arguments: piece } }] });
  });
  chunk({}, reply.tool_calls?.length && reply.tool_call_deltas !== 'gemini' ? 'tool_calls' : 'stop');

  const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
  if (streamOptions?.include_usage) {
    const { input = 10, output = 5, cached = 0 } = reply.usage ?? {};
    sendEvent(res, {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: 'fp_loopback',
      choices: [],
      usage: reply.raw_usage ?? {
        prompt_tokens: input,
        completion_tokens: output,
        total_tokens: input + output,
        prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
    });
  }
  sendEvent(res, '[DONE]');
  res.end();
}

export async function startOpenAiServer(options: { models?: string[]; port?: number } = {}): Promise<OpenAiServer> {
  let models = options.models ?? ['gpt-4o-mini'];
  const server = await startScriptedServer(
    (exchange) => {
      const { method, path, body, res } = exchange;
      if (method === 'GET' && path === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            data: models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'library' })),
          }),
        );
        return;
      }
      if (method !== 'POST' || path !== '/v1/chat/completions')
        return sendError(res, 404, undefined, `Unknown request URL: ${method} ${path}.`);
      if (body.stream !== true) return sendError(res, 400, undefined, 'this loopback server answers streamed requests only');
      const reply = exchange.takeReply();
      if (!reply) return sendError(res, 500, undefined, `no reply scripted for model ${String(body.model)}`);
      if (reply.status !== undefined) return sendError(res, reply.status, reply.retry_after);
      void streamReply(exchange, reply);
    },
    { ...(options.port === undefined ? {} : { port: options.port }), path: '/v1' },
  );
  return Object.assign(server, { setModels: (names: string[]) => void (models = names) });
}
