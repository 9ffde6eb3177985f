/**
 * Remote MCP servers over streamable HTTP, through the official SDK. Each listing or call opens a client
 * of its own and closes it afterwards: calls are activities, which may run on any worker.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolSpec } from '../models/messages.js';
import { storableJson, storableText } from '../models/storable-text.js';
import { depthProblem } from '../records/json-depth.js';
import { DEFAULT_PARAMETERS, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, MCP_NAME_SEPARATOR, type McpToolDefinition } from './definitions.js';
import { guardedFetch, ResponseTooLargeError } from './guarded-fetch.js';
import { checkListedTool, MAX_LISTING_BYTES, MAX_TOOLS_PER_SERVER, ToolsTooLargeError } from './offer-limits.js';
import { PrivateTargetError, type Reach } from './network-guard.js';
import { isPassingConnectionFailure, ToolUnavailableError, type ToolResult } from './outcomes.js';
import { traceHeaders } from '../tracing/context.js';

// A model-facing tool name, as the providers accept it.
const OFFERABLE_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
// How much of a result is shown to the model; the rest is cut with a note.
const MAX_RESULT_CHARS = 65_536;
// How long ending a session may hold up the end of a listing or call.
const SESSION_END_MS = 1_000;
// The most a server's answer may carry (the result shown to the model is cut far shorter).
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
// Pages of tools/list read before the listing is taken as complete.
const MAX_LIST_PAGES = 20;
/** Where a call's idempotency key goes in its `_meta`. */
export const IDEMPOTENCY_META_KEY = 'agentplane/idempotency-key';

/** The name a server's tool is offered under. */
export const offeredMcpName = (def: McpToolDefinition, tool: string) => `${def.server_label}${MCP_NAME_SEPARATOR}${tool}`;

/**
 * The server's tools as offered to a model, filtered by `allowed_tools`. Tools whose offered name a
 * provider would refuse (too long, or with characters other than letters, digits, `_` and `-`) are left out.
 * A listing past the limits of offer-limits.ts (bytes, tools, a description or schema) throws
 * ToolsTooLargeError.
 */
export async function listMcpTools(def: McpToolDefinition, reach: Reach): Promise<ToolSpec[]> {
  const specs: ToolSpec[] = [];
  await withClient(def, reach, { maxResponseBytes: MAX_LISTING_BYTES, maxTotalBytes: MAX_LISTING_BYTES }, async (client, options) => {
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await client.listTools(cursor === undefined ? {} : { cursor }, options);
      for (const tool of listed.tools) {
        const name = offeredMcpName(def, tool.name);
        if (def.allowed_tools && !def.allowed_tools.includes(tool.name)) continue;
        if (!OFFERABLE_NAME.test(name)) continue;
        const spec = { name, description: tool.description ?? tool.title ?? '', parameters: tool.inputSchema ?? DEFAULT_PARAMETERS };
        checkListedTool(def.server_label, spec);
        // Kept with the run (its offered tools) as PostgreSQL can keep it, once the schema's size is known to be bounded.
        specs.push({ ...spec, description: storableText(spec.description), parameters: storableJson(spec.parameters) });
        if (specs.length > MAX_TOOLS_PER_SERVER) {
          throw new ToolsTooLargeError(
            `The MCP server ${def.server_label} lists more than ${MAX_TOOLS_PER_SERVER} tools; name the ones to offer in allowed_tools.`,
          );
        }
      }
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
    }
  }).catch((err: unknown) => {
    throw asListingFailure(def, err, reach);
  });
  return specs;
}

/** Calls one of the server's tools by its own name (without the label). */
export async function callMcpTool(
  def: McpToolDefinition,
  toolName: string,
  args: Record<string, unknown>,
  reach: Reach,
  idempotencyKey?: string,
): Promise<ToolResult> {
  if (def.allowed_tools && !def.allowed_tools.includes(toolName))
    return { content: `There is no tool named ${offeredMcpName(def, toolName)}.`, is_error: true };
  try {
    return await withClient(def, reach, { maxResponseBytes: MAX_RESPONSE_BYTES }, async (client, options) => {
      const _meta = idempotencyKey ? { [IDEMPOTENCY_META_KEY]: idempotencyKey } : undefined;
      const result = (await client.callTool(
        { name: toolName, arguments: args, ...(_meta ? { _meta } : {}) },
        undefined,
        options,
      )) as CallToolResult;
      return { content: bounded(resultText(result)), is_error: result.isError === true };
    });
  } catch (err) {
    if (reach.signal.aborted) throw reach.signal.reason;
    if (err instanceof PrivateTargetError) return { content: `The request was refused: ${err.message}`, is_error: true };
    if (err instanceof ResponseTooLargeError)
      return {
        content: `The MCP server ${def.server_label} answered with more than ${err.maxBytes} bytes; the answer was not read`,
        is_error: true,
      };
    if (isOutage(err))
      throw new ToolUnavailableError(`the MCP server ${def.server_label} is unavailable: ${(err as Error).message}`, undefined, {
        cause: err,
      });
    if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
      return { content: `The MCP server ${def.server_label} did not answer within ${timeoutOf(def)} ms`, is_error: true };
    }
    if (err instanceof McpError || err instanceof StreamableHTTPError)
      return { content: `The MCP server ${def.server_label} answered: ${err.message}`, is_error: true };
    throw err;
  }
}

type CallOptions = { signal: AbortSignal; timeout: number; maxTotalTimeout: number };

async function withClient<T>(
  def: McpToolDefinition,
  reach: Reach,
  limits: { maxResponseBytes: number; maxTotalBytes?: number },
  work: (client: Client, options: CallOptions) => Promise<T>,
): Promise<T> {
  const transport = new StreamableHTTPClientTransport(new URL(def.server_url), {
    fetch: guardedFetch({ projectId: reach.projectId, allowPrivate: reach.allowPrivate, ...limits }),
    // The call's trace goes on to the server (`traceparent`), when tracing is on.
    requestInit: { headers: { ...def.headers, ...traceHeaders() } },
    // A session lives for one listing or one call; a dropped stream is a failed activity, retried whole.
    reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
  });
  const client = new Client({ name: 'agentplane', version: '0.1.0' });
  const options: CallOptions = { signal: reach.signal, timeout: timeoutOf(def), maxTotalTimeout: timeoutOf(def) };
  try {
    await client.connect(transport, options);
    return await work(client, options);
  } finally {
    // Ends the server's session, if it keeps one, without waiting long for a server that does not answer;
    // closing then aborts whatever is still open.
    await Promise.race([transport.terminateSession().catch(() => undefined), delay(SESSION_END_MS, undefined, { ref: false })]);
    await client.close().catch(() => undefined);
  }
}

const timeoutOf = (def: McpToolDefinition) => Math.min(def.timeout_ms ?? DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS);

/** Unreachable, reset, overloaded or failing on its side: worth trying again later. */
function isOutage(err: unknown): boolean {
  if (err instanceof StreamableHTTPError) return err.code !== undefined && (err.code === 429 || err.code >= 500);
  if (err instanceof McpError) return err.code === ErrorCode.ConnectionClosed;
  return isPassingConnectionFailure(err);
}

/** A listing that failed: retried when the server may come back, a plain error (the run fails) otherwise. */
function asListingFailure(def: McpToolDefinition, err: unknown, reach: Reach): unknown {
  if (reach.signal.aborted) return reach.signal.reason;
  if (err instanceof PrivateTargetError || err instanceof ToolsTooLargeError) return err;
  if (err instanceof ResponseTooLargeError) {
    return new ToolsTooLargeError(
      `The MCP server ${def.server_label} answered its tool listing with more than ${MAX_LISTING_BYTES} bytes.`,
    );
  }
  if (isOutage(err))
    return new ToolUnavailableError(`the MCP server ${def.server_label} is unavailable: ${(err as Error).message}`, undefined, {
      cause: err,
    });
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
    return new ToolUnavailableError(`the MCP server ${def.server_label} did not list its tools within ${timeoutOf(def)} ms`, undefined, {
      cause: err,
    });
  }
  return new Error(`the MCP server ${def.server_label} could not list its tools: ${(err as Error).message}`, { cause: err });
}

/** Text parts joined; other parts described, since the model cannot take their bytes here. */
function resultText(result: CallToolResult): string {
  const parts = result.content.map((part) => {
    switch (part.type) {
      case 'text':
        return part.text;
      case 'image':
      case 'audio':
        return `[${part.type} content: ${part.mimeType}, ${Buffer.byteLength(part.data, 'base64')} bytes, not shown]`;
      case 'resource_link':
        return `[resource: ${part.uri}${part.name ? ` (${part.name})` : ''}]`;
      case 'resource':
        return 'text' in part.resource && typeof part.resource.text === 'string'
          ? part.resource.text
          : `[resource: ${part.resource.uri}, not text]`;
      default:
        return '[content of an unknown kind, not shown]';
    }
  });
  if (parts.length === 0 && result.structuredContent !== undefined) {
    const tooDeep = depthProblem(result.structuredContent);
    return tooDeep ? `[structured content that ${tooDeep}, not shown]` : JSON.stringify(result.structuredContent);
  }
  return parts.join('\n');
}

function bounded(text: string): string {
  if (text.length <= MAX_RESULT_CHARS) return text;
  return `${text.slice(0, MAX_RESULT_CHARS)}\n\n[The result was longer than ${MAX_RESULT_CHARS} characters; only the first ${MAX_RESULT_CHARS} are shown.]`;
}
