/**
 * Every agent and network as an A2A server, under /a2a/{id}: its Agent Card at
 * /a2a/{id}/.well-known/agent-card.json, and one JSON-RPC endpoint at /a2a/{id} that speaks A2A 1.0
 * (`SendMessage`, …) and 0.3 (`message/send`, …) as the request's A2A-Version asks (none: 0.3, as the
 * protocol says). The same API keys and scopes as the REST API; another project's agent is not found.
 */
import { createHash } from 'node:crypto';
import Router from '@koa/router';
import { A2A_VERSION_HEADER, Extensions, HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { LEGACY_HTTP_EXTENSION_HEADER, isLegacyJsonRpcMethod, isV1JsonRpcMethod, legacyJsonRpcToV1Method } from '@a2a-js/sdk/compat/v0_3';
import { A2A_ERROR_CODE, ContentTypeNotSupportedError, VersionNotSupportedError } from '@a2a-js/sdk/errors';
import koaBody from 'koa-body';
import type { Middleware } from 'koa';
import type { ApiContext, ApiDeps, ApiState } from '../context.js';
import { callerOf } from '../context.js';
import { NotFoundError, PermissionError } from '../errors.js';
import { audited } from '../audit.js';
import { hasScope, requireAnyScope } from '../middleware/auth.js';
import { drainUnreadBody } from '../unread-body.js';
import { findAgent } from '../../records/agents.js';
import { findNetwork } from '../../records/networks.js';
import { agentCardOf, cardJson, legacyCardJson, LEGACY_PROTOCOL_VERSION, type CardSubject } from './card.js';
import { RunTaskHandler, type A2ATarget } from './request-handler.js';
import { COST_EXTENSION_URI } from './task.js';
import { answerRefusals, type JsonRpcId } from './refusals.js';
import { writeEventStream } from './event-stream.js';
import { depthProblem } from '../../records/json-depth.js';
import { unstorablePath } from '../validation.js';

// A message's files come in it, as base64 (a third larger than their bytes): room for MAX_FILE_BYTES of them and
// the text beside them, and no more.
const MAX_BODY_BYTES = 15 * 1024 * 1024;
const parseJson = koaBody({ multipart: false, urlencoded: false, text: false, json: true, jsonLimit: MAX_BODY_BYTES, jsonStrict: false });

/** What each method needs: running is `agents:run`, reading is `agents:read` (as for the REST API's runs). */
const RUN_METHODS = new Set(['SendMessage', 'SendStreamingMessage', 'CancelTask']);
const AUDITED: Record<string, string> = { SendMessage: 'run.create', SendStreamingMessage: 'run.create', CancelTask: 'run.cancel' };

function targetOf(id: string): A2ATarget | null {
  if (id.startsWith('agent_')) return { kind: 'agent', id };
  if (id.startsWith('net_')) return { kind: 'network', id };
  return null;
}

/** The agent (or network, with its members) behind `id`, if it is the caller's project's. */
async function subjectOf(ctx: ApiContext, deps: ApiDeps, id: string): Promise<{ target: A2ATarget; subject: CardSubject }> {
  const { projectId } = callerOf(ctx);
  const target = targetOf(id);
  if (target?.kind === 'agent') {
    const agent = await findAgent(deps.db, projectId, id);
    if (agent) return { target, subject: { kind: 'agent', agent } };
  } else if (target?.kind === 'network') {
    const network = await findNetwork(deps.db, projectId, id);
    if (network) {
      const members = await Promise.all(network.members.map((member) => findAgent(deps.db, projectId, member)));
      return { target, subject: { kind: 'network', network, members: members.flatMap((m) => (m ? [m] : [])) } };
    }
  }
  throw NotFoundError('agent', id);
}

/** Where clients reach this endpoint: as they addressed the API (behind the ingress, its X-Forwarded-* headers), under its base path. */
const endpointOf = (ctx: ApiContext, deps: ApiDeps, id: string) => `${ctx.protocol}://${ctx.host}${deps.basePath ?? ''}/a2a/${id}`;

/** The protocol version asked for, as Major.Minor (a patch number does not count); empty means 0.3. */
function requestedVersionOf(ctx: ApiContext): string {
  const given = (ctx.get(A2A_VERSION_HEADER) || String(ctx.query[A2A_VERSION_HEADER] ?? '')).trim();
  if (given === '') return LEGACY_PROTOCOL_VERSION;
  const match = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(given);
  return match ? `${match[1]}.${match[2]}` : given;
}

/** The JSON-RPC envelope's own faults (-32600), which the SDK would report as invalid params. */
function envelopeFault(body: unknown): string | null {
  if (Array.isArray(body)) return 'Batch requests are not supported.';
  if (typeof body !== 'object' || body === null) return 'The request must be a JSON-RPC 2.0 request object.';
  const request = body as Record<string, unknown>;
  if (request.jsonrpc !== '2.0') return '\'jsonrpc\' must be exactly "2.0".';
  const { id } = request;
  if ('id' in request && id !== null && typeof id !== 'string' && !(typeof id === 'number' && Number.isInteger(id))) {
    return "'id' must be a string, an integer or null.";
  }
  if (typeof request.method !== 'string' || request.method === '') return "'method' must be a non-empty string.";
  return null;
}

const idOf = (body: unknown): JsonRpcId => {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
};

function answer(ctx: ApiContext, id: JsonRpcId, code: number, message: string): void {
  ctx.status = 200;
  ctx.body = { jsonrpc: '2.0', id, error: { code, message } };
}

function serveCard(deps: ApiDeps): Middleware<ApiState> {
  return async (ctx) => {
    const { subject } = await subjectOf(ctx, deps, ctx.params.id!);
    const card = agentCardOf(subject, endpointOf(ctx, deps, ctx.params.id!));
    // A 0.3 client sends no A2A-Version: it is given the card as 0.3 wrote it (which 1.0 clients read as well).
    const body = JSON.stringify(requestedVersionOf(ctx) === LEGACY_PROTOCOL_VERSION ? legacyCardJson(card) : cardJson(card));
    ctx.set('Vary', `${A2A_VERSION_HEADER}, Authorization`);
    // Cards differ by key (another project's agent is not found): no shared cache may keep one.
    ctx.set('Cache-Control', 'private, max-age=60');
    ctx.set('ETag', `W/"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`);
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.type = 'application/json';
    ctx.body = body;
  };
}

function serveJsonRpc(deps: ApiDeps): Middleware<ApiState> {
  return async (ctx) => {
    const caller = callerOf(ctx);
    if (!ctx.is('application/json')) {
      drainUnreadBody(ctx);
      const error = JsonRpcTransportHandler.mapToJSONRPCError(new ContentTypeNotSupportedError('Send the request as application/json.'));
      ctx.status = 200;
      ctx.body = { jsonrpc: '2.0', id: null, error };
      return;
    }
    try {
      await parseJson(ctx, async () => {});
    } catch (err) {
      drainUnreadBody(ctx);
      const tooLarge = (err as { status?: number }).status === 413;
      return answer(
        ctx,
        null,
        tooLarge ? A2A_ERROR_CODE.INVALID_REQUEST : A2A_ERROR_CODE.PARSE_ERROR,
        tooLarge ? `The request is over ${MAX_BODY_BYTES} bytes (15 MiB).` : 'Invalid JSON payload.',
      );
    }
    const body = ctx.request.body as unknown;
    const deep = depthProblem(body);
    if (deep) return answer(ctx, idOf(body), A2A_ERROR_CODE.INVALID_REQUEST, `The request ${deep}.`);
    const fault = envelopeFault(body);
    if (fault) return answer(ctx, idOf(body), A2A_ERROR_CODE.INVALID_REQUEST, fault);
    const request = body as { id?: JsonRpcId; method: string; params?: unknown };
    const id = idOf(body);
    // As in every request to the API: PostgreSQL cannot keep the NUL character or half a surrogate pair, and ids and texts reach it.
    const unfit = unstorablePath(request.params, ['params']);
    if (unfit)
      return answer(ctx, id, A2A_ERROR_CODE.INVALID_PARAMS, `\`${unfit.path}\` holds ${unfit.holds}, which no string in a request may.`);

    const version = requestedVersionOf(ctx);
    const legacy = version === LEGACY_PROTOCOL_VERSION;
    const { target, subject } = await subjectOf(ctx, deps, ctx.params.id!);
    const card = agentCardOf(subject, endpointOf(ctx, deps, target.id));
    try {
      validateVersion(version, card, 'JSONRPC');
    } catch (err) {
      if (!(err instanceof VersionNotSupportedError)) throw err;
      ctx.body = { jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) };
      return;
    }
    // The two versions' method names are disjoint: one of the other version is named as such, not just unknown.
    if (legacy && isV1JsonRpcMethod(request.method)) {
      return answer(
        ctx,
        id,
        A2A_ERROR_CODE.METHOD_NOT_FOUND,
        `${request.method} is an A2A 1.0 method: send the header A2A-Version: 1.0 with it.`,
      );
    }
    if (!legacy && isLegacyJsonRpcMethod(request.method)) {
      return answer(
        ctx,
        id,
        A2A_ERROR_CODE.METHOD_NOT_FOUND,
        `${request.method} is an A2A 0.3 method: send it without A2A-Version (or with 0.3).`,
      );
    }
    const method = legacy && isLegacyJsonRpcMethod(request.method) ? legacyJsonRpcToV1Method(request.method) : request.method;

    const extensionHeader = legacy ? LEGACY_HTTP_EXTENSION_HEADER : HTTP_EXTENSION_HEADER;
    const context = new ServerCallContext({
      requestedExtensions: Extensions.parseServiceParameter(ctx.get(extensionHeader) || ctx.get(HTTP_EXTENSION_HEADER) || undefined),
      requestedVersion: version,
    });
    // Every task carries its cost; a client that asked for the extension is told it has it.
    if (context.requestedExtensions?.includes(COST_EXTENSION_URI)) context.addActivatedExtension(COST_EXTENSION_URI);
    const handler = new RunTaskHandler(ctx, deps, target, card);
    const transport = legacy ? new LegacyJsonRpcTransportHandler(handler) : new JsonRpcTransportHandler(handler);
    const scope = RUN_METHODS.has(method) ? 'agents:run' : 'agents:read';
    const dispatch = async () => {
      if (!hasScope(caller, scope)) throw PermissionError(scope);
      const result = await transport.handle(body as Record<string, unknown>, context);
      if (context.activatedExtensions?.length) ctx.set(extensionHeader, context.activatedExtensions.join(', '));
      if (handler.refusal) throw handler.refusal;
      if (result && typeof (result as AsyncGenerator)[Symbol.asyncIterator] === 'function') {
        await writeEventStream(ctx, deps, result as AsyncGenerator<unknown>, id, legacy, handler.closed.signal);
        return;
      }
      ctx.status = 200;
      ctx.body = result;
    };
    const action = AUDITED[method];
    if (action) await audited(deps.db, action, 'run')(ctx, dispatch);
    else await dispatch();
  };
}

/** `authenticated` and `limited` are the API's own middleware, shared with /v1 so a key's limits count every request. */
export function a2aRoutes(
  deps: ApiDeps,
  authenticated: Middleware<ApiState>,
  limited: Middleware<ApiState>,
  routerOptions: { methods: string[] },
): Router<ApiState> {
  const router = new Router<ApiState>({ ...routerOptions, prefix: '/a2a' });
  // Refusals before any operation (no key, no scope, too many requests, a dependency down) keep the
  // protocol's envelope on the JSON-RPC endpoint.
  router.use(answerRefusals());
  router.use(authenticated);
  router.use(limited);
  router.get('/:id/.well-known/agent-card.json', requireAnyScope('agents:read', 'agents:run'), serveCard(deps));
  router.post('/:id', serveJsonRpc(deps));
  return router;
}
