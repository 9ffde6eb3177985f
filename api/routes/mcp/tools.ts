/**
 * What a key sees in `tools/list`: `search_context` when it may read files, and each of its project's agents
 * and networks when it may run them, paged by an opaque cursor (agents, then networks, oldest first).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ApiDeps, Caller } from '../../context.js';
import { hasScope } from '../../middleware/auth.js';
import { listAgents } from '../../../records/agents.js';
import { listNetworks } from '../../../records/networks.js';
import { UnknownCursorError, type Page } from '../../../records/pagination.js';
import { SEARCH_CONTEXT_TOOL, toolNameOf, type ToolTarget } from './tool-names.js';

/** Tools per `tools/list` page. */
export const TOOLS_PAGE_SIZE = 50;

/** The scope each kind of call needs, as its REST endpoint does. */
export const LIST_SCOPE = 'agents:read';
export const RUN_SCOPE = 'agents:run';
export const SEARCH_SCOPE = 'files:read';

/** The arguments of an agent's or network's tool: the run's `input` and, optionally, its thread. */
export const RUN_INPUT_SCHEMA = {
  type: 'object',
  properties: {
    input: { type: 'string', minLength: 1, maxLength: 262_144, description: "The user's message to the agent." },
    thread_id: {
      type: 'string',
      description: "A thread to run on: its conversation comes before `input`, and the run's turn is added to it.",
    },
  },
  required: ['input'],
  additionalProperties: false,
} as const;

/** The run a call made, as `structuredContent`; its output is the result's text. */
export const RUN_OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    run_id: { type: 'string' },
    status: { type: 'string', enum: ['queued', 'in_progress', 'requires_action', 'completed', 'failed', 'cancelled'] },
    cost: { type: 'string', description: 'What the run cost so far, in USD.' },
    thread_id: { type: ['string', 'null'] },
    error: {
      type: ['object', 'null'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
  },
  required: ['run_id', 'status', 'cost'],
} as const;

const SEARCH_TOOL: Tool = {
  name: SEARCH_CONTEXT_TOOL,
  title: 'Search the context graph',
  description:
    "Searches the project's context graph (what its uploaded context files say): the entities, relations and passages that match the query, each with its source file.",
  inputSchema: {
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1, maxLength: 200, description: 'Words to look for.' },
      type: { type: 'string', enum: ['person', 'organization', 'place', 'date', 'money'], description: 'Only entities of this type.' },
      limit: { type: 'integer', minimum: 1, maximum: 50, default: 10, description: 'At most this many of each kind of match.' },
    },
    required: ['query'],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
};

interface Listed {
  id: string;
  name: string;
  description: string | null;
}

function runToolOf(target: ToolTarget, { name, description }: Listed): Tool {
  const what = target.kind === 'agent' ? 'agent' : 'agent network';
  return {
    name: toolNameOf(target, name),
    title: name,
    description: description || `Runs the ${what} "${name}" on the input and answers with its output.`,
    inputSchema: RUN_INPUT_SCHEMA as unknown as Tool['inputSchema'],
    outputSchema: RUN_OUTPUT_SCHEMA as unknown as Tool['outputSchema'],
    annotations: { readOnlyHint: false, openWorldHint: true },
  };
}

type Position = { kind: 'agent' | 'network'; after?: string };

const encodeCursor = (position: Position) => Buffer.from(JSON.stringify(position)).toString('base64url');

// The id a cursor stands at, as this server writes them (records/ids.ts): a forged one never reaches a query.
const POSITION_ID = /^(agent|net)_[A-Za-z0-9]{1,64}$/;

function decodeCursor(cursor: string): Position {
  try {
    const position = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Position;
    if (
      (position.kind === 'agent' || position.kind === 'network') &&
      (position.after === undefined || (typeof position.after === 'string' && POSITION_ID.test(position.after)))
    )
      return position;
  } catch {
    // Answered below, as every cursor this server did not make.
  }
  throw new McpError(ErrorCode.InvalidParams, 'Invalid cursor: pass the nextCursor of an earlier tools/list.');
}

export async function listTools(
  deps: ApiDeps,
  caller: Caller,
  cursor: string | undefined,
): Promise<{ tools: Tool[]; nextCursor?: string }> {
  const tools: Tool[] = [];
  let position: Position | null = cursor === undefined ? { kind: 'agent' } : decodeCursor(cursor);
  if (cursor === undefined && hasScope(caller, SEARCH_SCOPE)) tools.push(SEARCH_TOOL);
  if (!hasScope(caller, RUN_SCOPE)) return { tools };
  try {
    while (position && tools.length < TOOLS_PAGE_SIZE) {
      const kind: 'agent' | 'network' = position.kind;
      const request = { limit: TOOLS_PAGE_SIZE - tools.length, order: 'asc' as const, after: position.after };
      const page: Page<Listed> =
        kind === 'agent' ? await listAgents(deps.db, caller.projectId, request) : await listNetworks(deps.db, caller.projectId, request);
      tools.push(...page.rows.map((row) => runToolOf({ kind, id: row.id }, row)));
      const last = page.rows.at(-1);
      if (page.hasMore && last) position = { kind, after: last.id };
      else position = kind === 'agent' ? { kind: 'network' } : null;
    }
  } catch (err) {
    if (err instanceof UnknownCursorError)
      throw new McpError(ErrorCode.InvalidParams, 'Invalid cursor: the tool it stood at is gone; list again.');
    throw err;
  }
  return position ? { tools, nextCursor: encodeCursor(position) } : { tools };
}
