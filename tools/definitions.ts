/**
 * The tools an agent may be given, and the checks on them that a JSON Schema of their shape cannot
 * make: unique names across HTTP and A2A tools and MCP servers, a usable parameters schema, and targets that are
 * plain http(s) URLs on public hosts.
 */
import { parametersProblem } from './argument-schemas.js';
import { literalHostProblem, parsedUrl } from './network-guard.js';

/** Whether a call waits for a person's decision before it runs (tools/guards.ts). */
export type ToolApproval = { mode: 'never' | 'always' } | { mode: 'when'; arguments: Record<string, unknown> };

/** Calls whose arguments match `deny_when` are refused without running. */
export interface ToolPolicy {
  deny_when: Record<string, unknown>;
}

/** What any tool may carry besides what it calls. */
interface Guarded {
  approval?: ToolApproval;
  policy?: ToolPolicy;
}

export interface HttpToolDefinition extends Guarded {
  type: 'http';
  /** ^[a-zA-Z0-9_-]{1,64}$ */
  name: string;
  description?: string;
  /** http(s) */
  url: string;
  /** Default POST. */
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Sent as they are, e.g. Authorization. */
  headers?: Record<string, string>;
  /** JSON Schema of the arguments; default `{ type: 'object', properties: {} }`. */
  parameters?: Record<string, unknown>;
  /** Default 10000, at most 60000. */
  timeout_ms?: number;
  /** Default 65536, at most 1048576. */
  max_response_bytes?: number;
}

export interface McpToolDefinition extends Guarded {
  type: 'mcp';
  /** ^[a-zA-Z0-9_-]{1,32}$; its tools are offered as `<server_label>__<tool>`. */
  server_label: string;
  server_url: string;
  headers?: Record<string, string>;
  /** When present, only these of the server's tools are offered. */
  allowed_tools?: string[];
  /** Default 10000, at most 60000. */
  timeout_ms?: number;
}

/** A remote agent spoken to over A2A (tools/a2a.ts): the model sends it a message, and reads its task's answer. */
export interface A2aToolDefinition extends Guarded {
  type: 'a2a';
  /** ^[a-zA-Z0-9_-]{1,64}$, shared with HTTP tools. */
  name: string;
  /** Default: the description on the agent's card. */
  description?: string;
  /** The agent's card (e.g. `https://agent.example/.well-known/agent-card.json`): http(s). */
  card_url: string;
  /** Sent with every request, the card's included, e.g. `Authorization: Bearer …`. */
  headers?: Record<string, string>;
  /** How long the remote task may take. Default 60000, at most A2A_MAX_TIMEOUT_MS. */
  timeout_ms?: number;
}

/** The guards of a built-in tool, offered as it would be without them. */
export interface BuiltinToolDefinition extends Guarded {
  type: 'builtin';
  name: typeof READ_FILE_TOOL | typeof SEARCH_CONTEXT_TOOL;
}

export type ToolDefinition = HttpToolDefinition | McpToolDefinition | A2aToolDefinition | BuiltinToolDefinition;

export interface DefinitionProblem {
  /** Where the problem is, e.g. `tools.2.url`. */
  param: string;
  message: string;
}

/** The built-in tools, offered to runs with attachments and to projects with context; no HTTP tool may take their names. */
export const READ_FILE_TOOL = 'read_file' as const;
export const SEARCH_CONTEXT_TOOL = 'search_context' as const;
const BUILT_IN_TOOLS: string[] = [READ_FILE_TOOL, SEARCH_CONTEXT_TOOL];
/** Between an MCP server's label and its tool's name in the name offered to the model. */
export const MCP_NAME_SEPARATOR = '__';

export const DEFAULT_PARAMETERS: Record<string, unknown> = { type: 'object', properties: {} };
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 65_536;
export const MAX_RESPONSE_BYTES = 1_048_576;
export const A2A_DEFAULT_TIMEOUT_MS = 60_000;
/** Within the two minutes a tool call's activity may take (workflows/runs/workflow.ts), with room to cancel the task. */
export const A2A_MAX_TIMEOUT_MS = 110_000;

// Headers that frame or route the request: set by the HTTP client, never by a definition.
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'upgrade', 'keep-alive', 'te', 'trailer']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Tab and visible characters only: a CR or LF would start another header.
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Every problem found, in the order of the tools; empty when the definitions can be used. */
export function toolDefinitionProblems(tools: ToolDefinition[], options: { allowPrivate: boolean }): DefinitionProblem[] {
  const problems: DefinitionProblem[] = [];
  const labels = tools.flatMap((t) => (t.type === 'mcp' ? [t.server_label] : []));
  const seen = new Map<string, number>();
  tools.forEach((tool, i) => {
    const at = `tools.${i}`;
    if (tool.type === 'http' || tool.type === 'a2a') {
      // HTTP and A2A tools share one namespace: each is one function the model calls by name.
      const earlier = seen.get(`http:${tool.name}`);
      if (earlier !== undefined)
        problems.push({ param: `${at}.name`, message: `the name ${tool.name} is already used by tools.${earlier}` });
      else seen.set(`http:${tool.name}`, i);
      if (BUILT_IN_TOOLS.includes(tool.name))
        problems.push({ param: `${at}.name`, message: `${tool.name} is the name of a built-in tool` });
      const label = labels.find((l) => tool.name.startsWith(`${l}${MCP_NAME_SEPARATOR}`));
      if (label !== undefined) {
        problems.push({
          param: `${at}.name`,
          message: `names starting with ${label}${MCP_NAME_SEPARATOR} belong to the tools of the MCP server ${label}`,
        });
      }
      if (tool.type === 'http') {
        problems.push(...urlProblems(tool.url, `${at}.url`, options));
        if (tool.parameters !== undefined) problems.push(...parametersProblems(tool.parameters, `${at}.parameters`));
      } else problems.push(...urlProblems(tool.card_url, `${at}.card_url`, options));
      problems.push(...headerProblems(tool.headers, `${at}.headers`));
    } else if (tool.type === 'builtin') {
      const earlier = seen.get(`builtin:${tool.name}`);
      if (earlier !== undefined)
        problems.push({ param: `${at}.name`, message: `the built-in tool ${tool.name} is already used by tools.${earlier}` });
      else seen.set(`builtin:${tool.name}`, i);
    } else {
      const earlier = seen.get(`mcp:${tool.server_label}`);
      if (earlier !== undefined) {
        problems.push({ param: `${at}.server_label`, message: `the label ${tool.server_label} is already used by tools.${earlier}` });
      } else seen.set(`mcp:${tool.server_label}`, i);
      // So that `<label>__<tool>` splits one way only: the first `__` always ends the label.
      if (tool.server_label.includes(MCP_NAME_SEPARATOR) || tool.server_label.endsWith('_')) {
        problems.push({ param: `${at}.server_label`, message: 'a server label may not contain "__" or end with "_"' });
      }
      problems.push(...urlProblems(tool.server_url, `${at}.server_url`, options));
      problems.push(...headerProblems(tool.headers, `${at}.headers`));
    }
    if (tool.approval?.mode === 'when') problems.push(...schemaProblems(tool.approval.arguments, `${at}.approval.arguments`));
    if (tool.policy) problems.push(...schemaProblems(tool.policy.deny_when, `${at}.policy.deny_when`));
  });
  return problems;
}

function urlProblems(text: string, param: string, { allowPrivate }: { allowPrivate: boolean }): DefinitionProblem[] {
  const url = parsedUrl(text);
  if (typeof url === 'string') return [{ param, message: url }];
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return [{ param, message: 'must be an http or https URL' }];
  if (url.username !== '' || url.password !== '') return [{ param, message: 'must not carry credentials; send them in headers' }];
  const hostProblem = allowPrivate ? null : literalHostProblem(url);
  if (hostProblem) return [{ param, message: `${hostProblem}; only public addresses may be reached` }];
  return [];
}

function headerProblems(headers: Record<string, string> | undefined, param: string): DefinitionProblem[] {
  return Object.entries(headers ?? {}).flatMap(([name, value]) => {
    if (!HEADER_NAME.test(name)) return [{ param, message: `${JSON.stringify(name)} is not a header name` }];
    if (RESERVED_HEADERS.has(name.toLowerCase())) return [{ param: `${param}.${name}`, message: `${name} is set by the platform` }];
    if (typeof value !== 'string' || !HEADER_VALUE.test(value))
      return [{ param: `${param}.${name}`, message: 'must be text without line breaks' }];
    return [];
  });
}

function parametersProblems(schema: Record<string, unknown>, param: string): DefinitionProblem[] {
  if (schema.type !== 'object') return [{ param, message: 'must be a JSON Schema whose type is "object"' }];
  return schemaProblems(schema, param);
}

/** A schema matched against arguments (parameters, an approval's or a policy's): the same limits hold for each. */
function schemaProblems(schema: Record<string, unknown>, param: string): DefinitionProblem[] {
  const problem = parametersProblem(schema);
  return problem ? [{ param, message: problem }] : [];
}
