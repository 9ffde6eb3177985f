#!/usr/bin/env node
// The last step of `npm run build`: measures the script a browser loads before the console's first render
// (the entry chunk and what it imports statically, gzipped) from Vite's manifest, writes the figures to
// dist/console/bundle-size.json and fails the build over the budget.
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';

export const INITIAL_JS_BUDGET_BYTES = 150 * 1024;
const dir = fileURLToPath(new URL('../dist/console/', import.meta.url));
const manifest = JSON.parse(readFileSync(`${dir}.vite/manifest.json`, 'utf8'));

const gzipped = (file) => gzipSync(readFileSync(dir + file), { level: 9 }).length;
const entry = Object.values(manifest).find((chunk) => chunk.isEntry);
if (!entry) throw new Error('the console build has no entry chunk');

const initial = new Set();
const visit = (key) => {
  const chunk = manifest[key];
  if (!chunk || initial.has(chunk.file)) return;
  initial.add(chunk.file);
  for (const imported of chunk.imports ?? []) visit(imported);
};
visit(Object.keys(manifest).find((key) => manifest[key] === entry));

const all = new Set(
  Object.values(manifest)
    .map((chunk) => chunk.file)
    .filter((file) => file.endsWith('.js')),
);
const sum = (files) => [...files].reduce((total, file) => total + gzipped(file), 0);
const report = {
  initial_js_gzip_bytes: sum(initial),
  initial_files: [...initial],
  all_js_gzip_bytes: sum(all),
  budget_bytes: INITIAL_JS_BUDGET_BYTES,
};
writeFileSync(`${dir}bundle-size.json`, `${JSON.stringify(report, null, 2)}\n`);
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
console.log(
  `console: initial JS ${kb(report.initial_js_gzip_bytes)} gzipped (budget ${kb(INITIAL_JS_BUDGET_BYTES)}), all JS ${kb(report.all_js_gzip_bytes)}`,
);
if (report.initial_js_gzip_bytes > INITIAL_JS_BUDGET_BYTES) {
  console.error('console: the initial JS is over its budget');
  process.exit(1);
}
