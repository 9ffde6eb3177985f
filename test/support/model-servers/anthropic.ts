/**
 * A loopback server speaking Anthropic's Messages wire format: `POST /v1/messages` streamed as Anthropic
 * streams it (`message_start`, `content_block_*` with `text_delta` and `input_json_delta`, `message_delta`
 * with usage, `message_stop`), and errors with Anthropic's error body.
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

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

function sendError(res: ServerResponse, status: number, retryAfter?: number, message?: string): void {
  const requestId = `req_${randomId(24)}`;
  res.writeHead(status, {
    'content-type': 'application/json',
    'request-id': requestId,
    ...(retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) }),
  });
  const type = ERROR_TYPES[status] ?? 'api_error';
  res.end(JSON.stringify({ type: 'error', error: { type, message: message ?? `scripted ${type}` }, request_id: requestId }));
}

async function streamReply(exchange: Exchange, reply: ScriptedReply): Promise<void> {
  const { res, body } = exchange;
  const { input = 10, output = 5, cached = 0 } = reply.usage ?? {};
  const event = (data: { type: string } & Record<string, unknown>) => sendEvent(res, data, data.type);

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': `req_${randomId(24)}`,
  });
  event({
    type: 'message_start',
    message: {
      id: `msg_${randomId(24)}`,
      type: 'message',
      role: 'assistant',
      model: typeof body.model === 'string' ? body.model : 'unknown',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // Anthropic counts cached input apart from the rest.
      usage: {
        input_tokens: input - cached,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
        output_tokens: 1,
        service_tier: 'standard',
      },
    },
  });
  sendEvent(res, { type: 'ping' }, 'ping');

  let index = 0;
  if (reply.text?.length) {
    event({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    if (!(await streamText(exchange, reply, (text) => event({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } }))))
      return;
    if (reply.hang) return exchange.hold();
    event({ type: 'content_block_stop', index });
    index += 1;
  } else if (reply.hang) {
    return exchange.hold();
  }
  for (const call of reply.tool_calls ?? []) {
    event({
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: `toolu_${randomId(24)}`, name: call.name, input: {} },
    });
    for (const partial_json of ['', ...halves(call.arguments)])
      event({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
    event({ type: 'content_block_stop', index });
    index += 1;
  }
  event({
    type: 'message_delta',
    delta: { stop_reason: reply.tool_calls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: output },
  });
  event({ type: 'message_stop' });
  res.end();
}

/**
 * Anthropic's rule on content: every message holds some, but the last if it is the assistant's (a prefill),
 * and no text block is empty. It refuses a request that breaks it with 400, in these words.
 */
function emptyContentProblem(messages: unknown): string | null {
  const list = Array.isArray(messages) ? (messages as { role?: string; content?: unknown }[]) : [];
  for (const [i, message] of list.entries()) {
    const content = message.content;
    const blocks = Array.isArray(content) ? (content as { type?: string; text?: unknown }[]) : [];
    const j = blocks.findIndex((block) => block.type === 'text' && block.text === '');
    if (j >= 0) return `messages.${i}.content.${j}.text: text content blocks must be non-empty`;
    const empty = content === '' || (Array.isArray(content) && content.length === 0);
    if (empty && !(i === list.length - 1 && message.role === 'assistant'))
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
  }
  return null;
}

export async function startAnthropicServer(options: { port?: number } = {}): Promise<ModelServer> {
  return startScriptedServer(
    (exchange) => {
      const { method, path, body, res } = exchange;
      if (method !== 'POST' || path !== '/v1/messages') return sendError(res, 404, undefined, `Not found: ${method} ${path}`);
      if (body.stream !== true) return sendError(res, 400, undefined, 'this loopback server answers streamed requests only');
      const refused = emptyContentProblem(body.messages);
      if (refused) return sendError(res, 400, undefined, refused);
      const reply = exchange.takeReply();
      if (!reply) return sendError(res, 500, undefined, `no reply scripted for model ${String(body.model)}`);
      if (reply.status !== undefined) return sendError(res, reply.status, reply.retry_after);
      void streamReply(exchange, reply);
    },
    options.port === undefined ? {} : { port: options.port },
  );
}
