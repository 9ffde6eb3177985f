/**
 * How deep a JSON value the platform takes may nest objects and arrays: from a client's request, a model's tool
 * call or a remote tool's answer. Parsing a deeper one costs little, but whatever walks it afterwards by
 * recursion (checks, `JSON.stringify`, the libraries a value is handed to) runs out of stack: a client's
 * mistake would answer 500, and a tool's answer would fail its call, to be made again. The limit is
 * serde_json's default, far past any schema, message, dataset item or tool result anyone means to send.
 */
export const MAX_JSON_DEPTH = 128;

/** How `value` nests too deep ("nests objects and arrays deeper than …"), or null; looks no deeper than the limit. */
export function depthProblem(value: unknown): string | null {
  const pending: [object, number][] = value !== null && typeof value === 'object' ? [[value, 1]] : [];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, depth] = next;
    if (depth > MAX_JSON_DEPTH) return `nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels, the most allowed`;
    for (const child of Array.isArray(item) ? (item as unknown[]) : Object.values(item))
      if (child !== null && typeof child === 'object') pending.push([child, depth + 1]);
  }
  return null;
}
