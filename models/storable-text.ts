/**
 * Text as the platform can keep it. PostgreSQL's text and jsonb cannot hold U+0000, nor can jsonb hold half of
 * a UTF-16 surrogate pair (a JSON `\ud83d` without the `\ude00` that completes it), which a provider, a tool or
 * a remote agent may still answer with (a JSON escape, a NUL byte in a body, a text cut between an emoji's two
 * halves), and a PDF's text layer or a transcript may hold: kept as it came, it would fail the write that
 * records it, and the work would be done again. A NUL is left out and half a pair becomes U+FFFD (the
 * replacement character), wherever such text comes in.
 */
export function storableText(text: string): string {
  const kept = text.includes('\u0000') ? text.replaceAll('\u0000', '') : text;
  return kept.isWellFormed() ? kept : kept.toWellFormed();
}

const HALF_PAIR = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The first half of a surrogate pair in `text` that stands without its other half, as its JSON escape (`\ud83d`); null if none does. */
export function halfPairIn(text: string): string | null {
  if (text.isWellFormed()) return null;
  const half = HALF_PAIR.exec(text)![0];
  return `\\u${half.charCodeAt(0).toString(16)}`;
}

/** A JSON value whose strings and keys, at every depth, are storable text (a schema a tool server lists). */
export function storableJson<T>(value: T): T {
  if (typeof value === 'string') return storableText(value) as T;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item: unknown) => storableJson(item)) as T;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [storableText(key), storableJson(item as unknown)])) as T;
}
