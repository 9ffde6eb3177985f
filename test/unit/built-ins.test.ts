import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const moduleUrl = (relative: string) => new URL(relative, import.meta.url).href;

/**
 * Loads the API's and the worker's modules (the PDF engine among them) in a fresh process, and answers the
 * built-in functions that loading replaced, and whether the PDF engine's polyfills ran at all.
 */
const PROBE = `
const owners = {
  JSON, Math, Object, Array, Promise, Reflect, Number, String, Symbol,
  'Object.prototype': Object.prototype, 'Function.prototype': Function.prototype, 'Array.prototype': Array.prototype,
  'String.prototype': String.prototype, 'Number.prototype': Number.prototype, 'Promise.prototype': Promise.prototype,
  'Map.prototype': Map.prototype, 'Set.prototype': Set.prototype, 'WeakMap.prototype': WeakMap.prototype,
  'RegExp.prototype': RegExp.prototype, 'Date.prototype': Date.prototype, 'ArrayBuffer.prototype': ArrayBuffer.prototype,
  'TypedArray.prototype': Object.getPrototypeOf(Uint8Array.prototype), 'Uint8Array.prototype': Uint8Array.prototype,
  'Buffer.prototype': Buffer.prototype,
};
const snapshot = () => {
  const seen = new Map();
  for (const [ownerName, owner] of Object.entries(owners))
    for (const key of Reflect.ownKeys(owner)) {
      const { value, get, set } = Object.getOwnPropertyDescriptor(owner, key);
      if (typeof value === 'function' || get || set) seen.set(ownerName + '.' + String(key), [value, get, set]);
    }
  return seen;
};
const before = snapshot();
await import(${JSON.stringify(moduleUrl('../../cli/api-process.js'))});
await import(${JSON.stringify(moduleUrl('../../cli/worker-process.js'))});
await import(${JSON.stringify(moduleUrl('../../workflows/extraction/engines/pdf/document.js'))});
const replaced = [...snapshot()].filter(([name, now]) => before.has(name) && before.get(name).some((was, i) => was !== now[i]));
console.log(JSON.stringify({ replaced: replaced.map(([name]) => name), polyfilled: typeof Promise.withResolvers === 'function' }));
`;

describe("the process's built-ins", function () {
  this.timeout(60_000);

  it('are the native ones once the API and the worker have loaded, the PDF engine included', async () => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', PROBE]);
    const { replaced, polyfilled } = JSON.parse(stdout.trim().split('\n').pop()!) as { replaced: string[]; polyfilled: boolean };
    // What the PDF engine's polyfills add (Node 20 lacks it) is there: the engine did load them.
    assert.equal(polyfilled, true, 'Promise.withResolvers is missing: pdfjs did not load');
    assert.deepEqual(replaced, [], `loading replaced built-ins: ${replaced.join(', ')}`);
  });
});
