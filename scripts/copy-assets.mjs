#!/usr/bin/env node
// The second half of `npm run build`: the files the compiled code reads at run time, copied beside it in
// dist/, so that dist/ runs on its own (tsc emits only what it compiles).
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = fileURLToPath(new URL('..', import.meta.url));
const assets = [
  { from: 'scripts/versions.env', to: 'dist/scripts/versions.env' },
  { from: 'workflows/extraction/engines/speech/transcriber.py', to: 'dist/workflows/extraction/engines/speech/transcriber.py' },
  // Replaced whole, so that a migration renamed or removed in the source does not linger in dist/.
  { from: 'records/migrations', to: 'dist/records/migrations', only: (name) => name.endsWith('.sql') },
];

for (const { from, to, only } of assets) {
  rmSync(root + to, { recursive: true, force: true });
  cpSync(root + from, root + to, { recursive: true, filter: (source) => !only || source === root + from || only(source) });
}

// The OpenAPI document as JSON: every process that serves or checks requests reads it as it starts, and parsing
// the YAML took most of a second of that; JSON.parse takes milliseconds. api/openapi.yaml stays the source.
writeFileSync(root + 'dist/api/openapi.json', JSON.stringify(parse(readFileSync(root + 'api/openapi.yaml', 'utf8'))));
