/**
 * Text as the platform can keep it. PostgreSQL's text and jsonb cannot hold U+0000, which a provider, a tool
 * or a remote agent may still answer with (a JSON `\u0000`, a NUL byte in a body): kept as it came, it would
 * fail the write that records the answer, and the call would be made again. It is left out, as extraction
 * leaves it out of a file's text.
 */
export const withoutNul = (text: string): string => (text.includes('\u0000') ? text.replaceAll('\u0000', '') : text);
