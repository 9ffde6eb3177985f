/**
 * What stands between a model's tool call and the tool: the tool's policy, which refuses a call whose arguments
 * match `deny_when` without asking anyone, then its approval, which makes a call wait for a person. Both schemas
 * are a tenant's, matched like a tool's parameters (argument-schemas.ts): compiled once, in linear time.
 */
import type { ToolCall } from '../models/messages.js';
import { depthProblem } from '../records/json-depth.js';
import { compiledSchema, UNCHECKABLE } from './argument-schemas.js';
import { MCP_NAME_SEPARATOR, type ToolDefinition } from './definitions.js';

/**
 * The definition a call names: an HTTP tool, or a built-in tool's guards, by its name; an MCP server's tool by the
 * server's label.
 */
export function definitionOfCall(definitions: ToolDefinition[], name: string): ToolDefinition | undefined {
  const separator = name.indexOf(MCP_NAME_SEPARATOR);
  const label = separator > 0 ? name.slice(0, separator) : undefined;
  return definitions.find((def) => (def.type === 'mcp' ? def.server_label === label : def.name === name));
}

/**
 * Whether `args` match `schema`; a schema that cannot be used matches everything, and so do arguments it cannot
 * check, so that it never lets a call by.
 */
function matches(schema: Record<string, unknown>, args: Record<string, unknown>): boolean {
  const compiled = compiledSchema(schema);
  if ('problem' in compiled) return true;
  const problem = compiled.check(args);
  return problem === null || problem === UNCHECKABLE;
}

/** Why the tool's policy refuses the call, for the model to read; null when it does not. */
export function policyRefusal(def: ToolDefinition | undefined, name: string, args: Record<string, unknown>): string | null {
  if (!def?.policy || !matches(def.policy.deny_when, args)) return null;
  return `The call of ${name} was refused by the tool's policy: its arguments match what the policy denies. It was not run.`;
}

export function needsApproval(def: ToolDefinition | undefined, args: Record<string, unknown>): boolean {
  const approval = def?.approval;
  if (!approval) return false;
  if (approval.mode !== 'when') return approval.mode === 'always';
  return matches(approval.arguments, args);
}

/** The call's arguments as an object, or what to tell the model when they are not one. */
export function argumentsOf(call: ToolCall): Record<string, unknown> | string {
  // Some models send nothing at all for a tool without parameters.
  if (call.arguments.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(call.arguments);
  } catch (err) {
    return `The arguments are not valid JSON (${(err as Error).message}); send a JSON object.`;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return 'The arguments must be a JSON object.';
  const tooDeep = depthProblem(parsed);
  if (tooDeep) return `The arguments are too deep: their object ${tooDeep}; send a shallower one.`;
  return parsed as Record<string, unknown>;
}
