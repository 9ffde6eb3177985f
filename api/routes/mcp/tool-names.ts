/**
 * An agent's or network's name as an MCP tool name. Names of agents need be neither unique nor valid tool
 * names, so the tool is named `<name, reduced>__<id>`: the name without its accents, lowered to ASCII
 * letters, digits and single underscores (cut to fit), then the id. Ids are unique, so the tool name is; it
 * uses only characters every client and model API accepts (a subset of what the specification allows) and is
 * at most 64 long. The id after the last `__` is what a call is resolved by, so a tool keeps answering to its
 * old name after a rename.
 */

export type ToolTarget = { kind: 'agent' | 'network'; id: string };

/** SEP-986 allows up to 128; OpenAI's function names stop at 64. */
const MAX_TOOL_NAME = 64;
const ID_PREFIXES = { agent_: 'agent', net_: 'network' } as const;

export const SEARCH_CONTEXT_TOOL = 'search_context';

export function toolNameOf(target: ToolTarget, name: string): string {
  const suffix = `__${target.id}`;
  const reduced = name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toLowerCase()
    .slice(0, MAX_TOOL_NAME - suffix.length)
    .replace(/^_+|_+$/g, '');
  return `${reduced || target.kind}${suffix}`;
}

/** The agent or network a tool name stands for, or null when it names none (search_context included). */
export function targetOfToolName(toolName: string): ToolTarget | null {
  const at = toolName.lastIndexOf('__');
  if (at < 0 || toolName.length > MAX_TOOL_NAME) return null;
  const id = toolName.slice(at + 2);
  for (const [prefix, kind] of Object.entries(ID_PREFIXES)) {
    if (id.startsWith(prefix) && /^[A-Za-z0-9]+$/.test(id.slice(prefix.length))) return { kind, id };
  }
  return null;
}
