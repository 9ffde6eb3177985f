/**
 * Text as the platform can keep it. PostgreSQL's text and jsonb cannot hold U+0000, which a provider, a tool or a
 * remote agent may still answer with (a JSON `\u0000`, a NUL byte in a body), and a PDF's text layer or a
 * transcript may hold: kept as it came, it would fail the write that records it, and the work would be done
 * again. It is left out, wherever such text comes in.
 */
export const withoutNul = (text: string): string => (text.includes('\u0000') ? text.replaceAll('\u0000', '') : text);
