/**
 * pdfjs-dist's legacy build (the one for Node), loaded without letting it replace the process's built-ins.
 * Its bundled polyfills add what Node 20 lacks (Promise.withResolvers, Set methods, iterator helpers…),
 * which pdfjs needs, but also replace `JSON.stringify`, `JSON.parse`, `Array.prototype.push` and
 * `Function.prototype.toString` with JavaScript versions of their newest behaviour. Every JSON answer, log
 * line, query parameter and Temporal payload of the process would go through those: the stringify walks its
 * output a character at a time, about 50 times slower than the native one on a megabyte. The native ones are
 * put back once pdfjs has loaded; pdfjs uses none of the features they were replaced for (raw JSON, parse
 * with source).
 */
const builtIns = [
  [JSON, 'stringify'],
  [JSON, 'parse'],
  [Array.prototype, 'push'],
  [Function.prototype, 'toString'],
] as const;
const kept = builtIns.map(([owner, name]) => Object.getOwnPropertyDescriptor(owner, name)!);

const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
builtIns.forEach(([owner, name], i) => Object.defineProperty(owner, name, kept[i]!));

export const { getDocument, OPS, PDFDataRangeTransport, VerbosityLevel } = pdfjs;
