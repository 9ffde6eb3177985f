/**
 * The MCP server itself, behind POST /v1/mcp (mcp.ts): one message, checked against the protocol and the caller's
 * scopes, answered by a server of its own. Loaded with the first request that gets this far, with the SDK.
 */
import { createRequire } from 'node:module';
import { koaBody } from 'koa-body';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  McpError,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { ApiContext, ApiDeps } from '../../context.js';
import { callerOf } from '../../context.js';
import { hasScope } from '../../middleware/auth.js';
import { ApiError, toApiError, UnsupportedMediaError } from '../../errors.js';
import type { InFlightCalls } from './in-flight-calls.js';
import { listTools, LIST_SCOPE, RUN_SCOPE, SEARCH_SCOPE } from './tools.js';
import { SEARCH_CONTEXT_TOOL, targetOfToolName } from './tool-names.js';
import { callRunTool } from './run-tool.js';
import { callSearchTool } from './search-tool.js';
import { depthProblem } from '../../../records/json-depth.js';

const { version } = createRequire(import.meta.url)('../../../../package.json') as { version: string };

const INSTRUCTIONS =
  "Each tool but search_context runs one of the project's agents or agent networks on `input` (optionally on a thread, `thread_id`) and answers with the run's output. search_context searches what the project's context files say.";

/** `_meta` key of a tools/call that makes it idempotent, as `Idempotency-Key` makes a REST request. */
export const IDEMPOTENCY_META_KEY = 'agentplane.io/idempotency-key';

// One JSON-RPC message, as the REST API bounds a JSON body; a run's input is at most 256 Ki characters.
const parseJson = koaBody({ multipart: false, urlencoded: false, text: false, json: true, jsonLimit: '1mb', jsonStrict: true });

/** What the message asks for needs this scope (as its REST endpoint does); null when any valid key may. */
function scopeNeeded(message: JSONRPCMessage): string | null {
  if (!('method' in message) || !('id' in message)) return null;
  if (message.method === 'tools/list') return LIST_SCOPE;
  if (message.method !== 'tools/call') return null;
  const name = (message.params as { name?: unknown } | undefined)?.name;
  if (name === SEARCH_CONTEXT_TOOL) return SEARCH_SCOPE;
  return typeof name === 'string' && targetOfToolName(name) ? RUN_SCOPE : null;
}

export async function serveMcp(ctx: ApiContext, deps: ApiDeps, calls: InFlightCalls): Promise<void> {
  const caller = callerOf(ctx);
  if (!ctx.is('application/json'))
    throw UnsupportedMediaError('unsupported_content_type', 'Send the JSON-RPC message as application/json.');
  await parseJson(ctx, async () => {});
  const deep = depthProblem(ctx.request.body);
  if (deep) throw new ApiError(400, 'invalid_request_error', 'invalid_request', `The body ${deep}.`);
  const parsed = JSONRPCMessageSchema.safeParse(ctx.request.body);
  if (!parsed.success) {
    const batch = Array.isArray(ctx.request.body) ? ' (batches are not part of the protocol since its 2025-06-18 revision)' : '';
    throw new ApiError(400, 'invalid_request_error', 'invalid_request', `The body is not one JSON-RPC message${batch}.`);
  }
  const message = parsed.data;
  const invalid = invalidParamsOf(message);
  if (invalid) {
    ctx.body = { jsonrpc: '2.0', id: invalid.id, error: { code: ErrorCode.InvalidParams, message: invalid.message } };
    return;
  }

  const scope = scopeNeeded(message);
  if (scope && !hasScope(caller, scope)) {
    const said = `This API key lacks the \`${scope}\` scope.`;
    throw new ApiError(403, 'permission_error', 'missing_scope', said, null, {
      'WWW-Authenticate': `Bearer realm="agentplane", error="insufficient_scope", scope="${scope}", error_description="${said.replaceAll('`', '')}"`,
    });
  }
  if ('method' in message && message.method === 'notifications/cancelled' && !('id' in message)) {
    const { requestId, reason } = (message.params ?? {}) as { requestId?: string | number; reason?: string };
    if (requestId !== undefined) calls.cancel(caller.apiKeyId, requestId, reason ?? 'cancelled by the client');
  }

  // A run's call streams for as long as the run goes: it holds one of the key's event stream slots.
  const streams = scope === RUN_SCOPE;
  const release = streams ? deps.streamSlots.take(caller.apiKeyId, ctx.state.place) : undefined;
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streams });
  const server = mcpServerFor(ctx, deps, calls, () => void server.close());
  ctx.respond = false;
  // The client closing the stream ends the server, which aborts its calls: their runs are cancelled.
  ctx.res.on('close', () => {
    release?.();
    void server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(ctx.req, ctx.res, message);
  } catch (err) {
    ctx.state.log.error({ err }, 'the MCP transport failed');
    if (!ctx.res.headersSent) {
      ctx.res.writeHead(500, { 'content-type': 'application/json' });
      ctx.res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: ErrorCode.InternalError, message: 'Internal error' } }));
    } else ctx.res.destroy();
  }
}

const REQUEST_SCHEMAS = { 'tools/list': ListToolsRequestSchema, 'tools/call': CallToolRequestSchema } as const;

/** A tools request whose params are not what the method takes (the SDK would answer it -32603, not -32602). */
function invalidParamsOf(message: JSONRPCMessage): { id: string | number; message: string } | null {
  if (!('method' in message) || !('id' in message) || !(message.method in REQUEST_SCHEMAS)) return null;
  const checked = REQUEST_SCHEMAS[message.method as keyof typeof REQUEST_SCHEMAS].safeParse(message);
  if (checked.success) return null;
  const issue = checked.error.issues[0];
  const where = issue?.path.join('.') || 'params';
  return { id: message.id, message: `Invalid params: ${where}: ${issue?.message ?? 'not valid'}` };
}

function idempotencyKeyOf(meta: Record<string, unknown> | undefined): string | undefined {
  const key = meta?.[IDEMPOTENCY_META_KEY];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key.length < 1 || key.length > 255)
    throw new McpError(ErrorCode.InvalidParams, `_meta["${IDEMPOTENCY_META_KEY}"] is a string of 1 to 255 characters.`);
  return key;
}

/** The server one request is answered by, acting for its caller. `endWithoutAnswer` ends the request's stream. */
function mcpServerFor(ctx: ApiContext, deps: ApiDeps, calls: InFlightCalls, endWithoutAnswer: () => void): Server {
  const caller = callerOf(ctx);
  const server = new Server(
    { name: 'agentplane', title: 'Agentplane', version },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  );
  server.setRequestHandler(
    ListToolsRequestSchema,
    hidingFaults(ctx, (request) => listTools(deps, caller, request.params?.cursor)),
  );
  server.setRequestHandler(
    CallToolRequestSchema,
    hidingFaults(ctx, async (request, extra) => {
      const { name, arguments: args = {}, _meta: meta } = request.params;
      if (name === SEARCH_CONTEXT_TOOL) return callSearchTool(ctx, deps, args);
      const target = targetOfToolName(name);
      if (!target) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
      const idempotencyKey = idempotencyKeyOf(meta);
      const token = meta?.progressToken;
      const cancelled = new AbortController();
      const unregister = calls.add(caller.apiKeyId, extra.requestId, cancelled);
      try {
        const notify =
          token === undefined
            ? undefined
            : (progress: number, message: string) =>
                extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, message } });
        const result = await callRunTool(ctx, deps, name, target, args, {
          signal: AbortSignal.any([extra.signal, cancelled.signal]),
          notify,
          idempotencyKey,
        });
        // A cancelled request is not answered (the protocol's rule): its stream just ends.
        if (cancelled.signal.aborted) endWithoutAnswer();
        return result;
      } finally {
        unregister();
      }
    }),
  );
  return server;
}

/**
 * A handler whose failures reach the client as the protocol's errors it chose, or as an internal error that says
 * nothing of this server's insides (the SDK would send any error's own message); a dependency down says so.
 */
function hidingFaults<A extends unknown[], R>(ctx: ApiContext, handler: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await handler(...args);
    } catch (err) {
      if (err instanceof McpError) throw err;
      const known = toApiError(err);
      if (known && known.status === 503) throw new McpError(ErrorCode.InternalError, known.message);
      ctx.state.log.error({ err }, 'MCP request failed');
      throw new McpError(ErrorCode.InternalError, 'The server failed to handle the request.');
    }
  };
}
