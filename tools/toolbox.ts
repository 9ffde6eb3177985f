/**
 * The one entry point the run activities use: which tools a run offers its model, and carrying out one
 * call the model made. A call the model got wrong (an unknown name, arguments that are not a JSON object)
 * is a result it can read; only an unavailable tool throws (ToolUnavailableError), to be retried.
 */
import type { ToolCall, ToolSpec } from '../models/messages.js';
import type { Db } from '../records/db.js';
import { DEFAULT_PARAMETERS, MCP_NAME_SEPARATOR, READ_FILE_TOOL, SEARCH_CONTEXT_TOOL, type ToolDefinition } from './definitions.js';
import { hasContext, searchContext, searchContextSpec } from './search-context.js';
import { callHttpTool } from './http-tool.js';
import type { RemoteTaskMemory } from './a2a.js';
import type { Reach } from './network-guard.js';
import { checkOffered } from './offer-limits.js';
import { argumentsOf, definitionOfCall } from './guards.js';
import type { ToolResult } from './outcomes.js';
import { storableText } from '../models/storable-text.js';
import { readFile, readFileSpec } from './read-file.js';

export { ToolUnavailableError, type ToolResult } from './outcomes.js';
export { ToolsTooLargeError } from './offer-limits.js';

export interface ToolContext extends Reach {
  db: Db;
  projectId: string;
  /** The files attached to the run; `read_file` is offered when there is at least one. */
  attachmentIds: string[];
  /** The embedding model's folder, if installed: search_context ranks by meaning as well as words. */
  embeddingModelDir?: string;
  /**
   * The same for every attempt at one call, and no other: sent as HTTP tools' `Idempotency-Key` header and in MCP
   * calls' `_meta`, so that a tool which honours it performs a call once however often a retry sends it.
   */
  idempotencyKey?: string;
  /** The subject whose memories the run is given, if any: `search_context` searches them too. */
  memorySubject?: string | null;
  /** Whether the project has context files to search, when the caller has just read it (hasContext otherwise). */
  hasContext?: boolean | null;
  /** The run: an A2A agent's card is read once for it. */
  runId?: string;
  /** The call's step, for an A2A tool: the remote task an earlier attempt started, and where to keep the one it starts. */
  remoteTask?: RemoteTaskMemory;
}

// The A2A and MCP clients are loaded with a process's first tool of their kind: their SDKs (and zod, under MCP's)
// take a process most of a second to load, which one whose agents use neither never spends.
const a2a = () => import('./a2a.js');
const mcp = () => import('./mcp.js');

/**
 * HTTP tools, A2A agents (one tool each), the listed tools of each MCP server, `read_file` when the run has attachments, and
 * `search_context` when the project has context files to search. More than a run may offer
 * (offer-limits.ts) throws ToolsTooLargeError.
 */
export async function offeredTools(definitions: ToolDefinition[], ctx: ToolContext): Promise<ToolSpec[]> {
  const offered = await Promise.all(
    definitions.map(async (def): Promise<ToolSpec[]> => {
      if (def.type === 'mcp') return (await mcp()).listMcpTools(def, ctx);
      // A built-in tool's guards: the tool itself is offered below, when the run has what it reads.
      if (def.type === 'builtin') return [];
      if (def.type === 'a2a') return [await (await a2a()).a2aToolSpec(def, ctx)];
      return [{ name: def.name, description: def.description ?? '', parameters: def.parameters ?? DEFAULT_PARAMETERS }];
    }),
  );
  if (ctx.attachmentIds.length > 0) offered.push([await readFileSpec(ctx)]);
  if (ctx.memorySubject || (ctx.hasContext ?? (await hasContext(ctx)))) offered.push([searchContextSpec]);
  const specs = offered.flat();
  checkOffered(specs);
  return specs;
}

/** The tool's result, as the run can store it: without what PostgreSQL cannot hold (models/storable-text.ts). */
export async function invokeTool(definitions: ToolDefinition[], call: ToolCall, ctx: ToolContext): Promise<ToolResult> {
  const result = await answerOf(definitions, call, ctx);
  return { ...result, content: storableText(result.content) };
}

async function answerOf(definitions: ToolDefinition[], call: ToolCall, ctx: ToolContext): Promise<ToolResult> {
  const args = argumentsOf(call);
  if (typeof args === 'string') return { content: args, is_error: true };
  if (call.name === READ_FILE_TOOL && ctx.attachmentIds.length > 0) return readFile(args, ctx);
  if (call.name === SEARCH_CONTEXT_TOOL) return searchContext(args, ctx);
  // Labels neither contain "__" nor end with "_" (toolDefinitionProblems), so the first "__" ends the label.
  const def = definitionOfCall(definitions, call.name);
  if (def?.type === 'http') return callHttpTool(def, args, ctx, ctx.idempotencyKey);
  if (def?.type === 'a2a') {
    const memory = ctx.remoteTask ?? { previous: null, remember: async () => {} };
    return (await a2a()).callA2aTool(def, args, ctx, memory, ctx.idempotencyKey);
  }
  if (def?.type === 'mcp')
    return (await mcp()).callMcpTool(
      def,
      call.name.slice(def.server_label.length + MCP_NAME_SEPARATOR.length),
      args,
      ctx,
      ctx.idempotencyKey,
    );
  return { content: `There is no tool named ${call.name}.`, is_error: true };
}
