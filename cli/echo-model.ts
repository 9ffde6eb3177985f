/**
 * `agentplane echo-model`: a model server to try agents with no provider at all. It speaks OpenAI's Chat
 * Completions protocol on loopback, serves one model, `echo`, and answers with the last user message,
 * streamed back a word at a time at a readable pace, so that following a run's stream or cancelling it
 * half-way can be tried by hand. Point the platform at it with OPENAI_BASE_URL=<its URL>/v1.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';

export const ECHO_MODEL = 'echo';
export const ECHO_MODEL_PORT = 11435;
export const ECHO_WORD_MS = 200;
// Chat requests are small; anything far larger is not one.
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface EchoModelOptions {
  port: number;
  /** The pause before each word after the first. */
  wordMs: number;
  /** Told of each request as it is answered or abandoned. */
  log?: (line: string) => void;
}

export interface EchoModelServer {
  /** The base URL an OpenAI client takes: ends in /v1. */
  url: string;
  close(): Promise<void>;
}

class RequestProblem extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly code: string | null,
    message: string,
  ) {
    super(message);
  }
}

interface ChatRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** The last user message's text: what is echoed. */
  echoed: string;
  /** Every message's text, for a rough count of input tokens. */
  inputText: string;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) =>
      typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text'
        ? String((part as { text?: unknown }).text ?? '')
        : '',
    )
    .join('\n');
}

function chatRequestOf(body: unknown): ChatRequest {
  if (typeof body !== 'object' || body === null)
    throw new RequestProblem(400, 'invalid_request_error', null, 'The body must be a JSON object.');
  const { model, messages, stream, stream_options: streamOptions } = body as Record<string, unknown>;
  if (typeof model !== 'string') throw new RequestProblem(400, 'invalid_request_error', null, "'model' is required.");
  if (model !== ECHO_MODEL) {
    throw new RequestProblem(
      404,
      'invalid_request_error',
      'model_not_found',
      `The model '${model}' does not exist; this server has one model, '${ECHO_MODEL}'.`,
    );
  }
  if (!Array.isArray(messages) || messages.length === 0)
    throw new RequestProblem(400, 'invalid_request_error', null, "'messages' must be a non-empty array.");
  const texts = messages.map((m: unknown) => (typeof m === 'object' && m !== null ? (m as Record<string, unknown>) : {}));
  const lastUser = texts.filter((m) => m.role === 'user').at(-1);
  return {
    model,
    stream: stream === true,
    includeUsage:
      typeof streamOptions === 'object' && streamOptions !== null && (streamOptions as { include_usage?: unknown }).include_usage === true,
    echoed: lastUser ? textOf(lastUser.content) : '',
    inputText: texts.map((m) => textOf(m.content)).join('\n'),
  };
}

/** Words with the whitespace after each, so that joined they are the text again (less leading space). */
const wordsOf = (text: string): string[] => text.match(/\S+\s*/g) ?? [];

async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      throw new RequestProblem(413, 'invalid_request_error', null, `The body is larger than ${MAX_BODY_BYTES} bytes.`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new RequestProblem(400, 'invalid_request_error', null, 'The body is not valid JSON.');
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function sendProblem(res: ServerResponse, problem: RequestProblem): void {
  sendJson(res, problem.status, { error: { message: problem.message, type: problem.type, param: null, code: problem.code } });
}

function usageOf(request: ChatRequest, words: string[]) {
  const input = wordsOf(request.inputText).length;
  return { prompt_tokens: input, completion_tokens: words.length, total_tokens: input + words.length };
}

/** Streams the echo as OpenAI does: a role chunk, a chunk per word, the finish, usage if asked, [DONE]. */
function streamEcho(res: ServerResponse, request: ChatRequest, wordMs: number, log: (line: string) => void): void {
  const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
  const created = Math.floor(Date.now() / 1000);
  const words = wordsOf(request.echoed);
  const send = (data: unknown) => res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    send({
      id,
      object: 'chat.completion.chunk',
      created,
      model: request.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });

  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  chunk({ role: 'assistant', content: '' });
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  res.on('close', () => {
    clearTimeout(timer);
    if (sent < words.length) log(`stream closed by the client after ${sent} of ${words.length} words`);
  });
  const next = () => {
    if (res.destroyed) return;
    if (sent < words.length) {
      chunk({ content: words[sent] });
      sent += 1;
      timer = setTimeout(next, wordMs);
      return;
    }
    chunk({}, 'stop');
    if (request.includeUsage)
      send({ id, object: 'chat.completion.chunk', created, model: request.model, choices: [], usage: usageOf(request, words) });
    send('[DONE]');
    res.end();
    log(`streamed ${words.length} words`);
  };
  next();
}

function answerWhole(res: ServerResponse, request: ChatRequest): void {
  const words = wordsOf(request.echoed);
  sendJson(res, 200, {
    id: `chatcmpl-${randomBytes(12).toString('hex')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: [{ index: 0, message: { role: 'assistant', content: words.join(''), refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: usageOf(request, words),
  });
}

export async function startEchoModel({ port, wordMs, log = () => {} }: EchoModelOptions): Promise<EchoModelServer> {
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://loopback').pathname.replace(/\/+$/, '');
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: ECHO_MODEL, object: 'model', created: 0, owned_by: 'agentplane' }] });
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      const request = chatRequestOf(await bodyOf(req));
      return request.stream ? streamEcho(res, request, wordMs, log) : answerWhole(res, request);
    }
    throw new RequestProblem(
      404,
      'invalid_request_error',
      null,
      `Unknown request URL: ${req.method} ${path}. This server answers GET /v1/models and POST /v1/chat/completions.`,
    );
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      sendProblem(res, err instanceof RequestProblem ? err : new RequestProblem(500, 'server_error', null, 'The echo model failed.'));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: actual } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${actual}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
