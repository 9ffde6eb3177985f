/** `tools/call` of `search_context`: what `GET /v1/graph/search` answers, as structured content and its JSON text. */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ApiContext, ApiDeps } from '../../context.js';
import { ApiError, toApiError } from '../../errors.js';
import { checkQuery } from '../../validation.js';
import { searchContext } from '../graph/graph.js';
import { refusalResult } from './run-tool.js';

const ARGUMENTS = new Set(['query', 'type', 'limit']);

export async function callSearchTool(ctx: ApiContext, deps: ApiDeps, args: Record<string, unknown>): Promise<CallToolResult> {
  try {
    const unknown = Object.keys(args).find((name) => !ARGUMENTS.has(name));
    if (unknown !== undefined) throw new ApiError(400, 'invalid_request_error', 'unknown_parameter', `Unknown argument \`${unknown}\`.`);
    // The tool's `query` is the endpoint's `q`; everything else is checked as the endpoint checks it.
    const { query, ...rest } = args;
    const result = await searchContext(ctx, deps, checkQuery('searchGraph', { ...rest, q: query }));
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  } catch (err) {
    const refusal = toApiError(err);
    if (refusal) return refusalResult(refusal.param === 'q' ? asQueryArgument(refusal) : refusal);
    throw err;
  }
}

/** A refusal of the endpoint's `q`, told of the tool's argument, `query`, which the caller sent. */
function asQueryArgument(refusal: ApiError): ApiError {
  const message = refusal.message.replaceAll('`q`', '`query`');
  return new ApiError(refusal.status, refusal.type, refusal.code, message, 'query', refusal.headers, refusal.details);
}
