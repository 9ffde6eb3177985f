#!/usr/bin/env node
// `npm run test:fast`: the unit, golden and workflow tests (no services) on the code scripts/transpile.mjs has
// just compiled, while the type checker reads the whole program beside them, each on a core of its own. The
// command fails when either does; the type checker's findings are printed after the tests.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const TESTS = ['dist/test/unit/**/*.test.js', 'dist/test/workflows/**/*.test.js'];

function run(script, args, { quiet = false } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'] });
    let output = '';
    if (quiet) for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolve({ ok: code === 0, output }));
  });
}

const [tests, types] = await Promise.all([
  run(require.resolve('mocha/bin/mocha.js'), TESTS),
  run(
    require.resolve('typescript/bin/tsc'),
    ['-p', 'tsconfig.json', '--noEmit', '--incremental', '--tsBuildInfoFile', 'dist/.tsbuildinfo-types'],
    {
      quiet: true,
    },
  ),
]);
if (types.ok) console.log('types: no errors');
else console.error(`types:\n${types.output}`);
process.exit(tests.ok && types.ok ? 0 : 1);
