import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * Which top-level folder may import which (docs/architecture.md). `api/generated` is the contract: its
 * types may be imported by every layer.
 */
const allowed: Record<string, string[]> = {
  client: [],
  models: [],
  // Trace context and spans, which every server-side layer may make.
  tracing: [],
  presenters: ['records', 'models'],
  records: ['models', 'tracing'],
  tools: ['records', 'models', 'tracing'],
  workflows: ['records', 'presenters', 'models', 'tools', 'tracing'],
  api: ['records', 'presenters', 'workflows', 'models', 'tools', 'tracing'],
  controllers: ['client', 'tracing'],
  // The console is an API client like any other.
  console: ['client'],
  cli: ['api', 'records', 'presenters', 'workflows', 'models', 'tools', 'client', 'controllers', 'tracing'],
};

async function sourcesOf(folder: string): Promise<string[]> {
  const entries = await readdir(join(root, folder), { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')).map((e) => join(e.parentPath, e.name));
}

async function importsOf(file: string): Promise<{ specifier: string; typeOnly: boolean }[]> {
  const text = await readFile(file, 'utf8');
  return [...text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+'(\.[^']+)'/gm)].map((m) => ({
    specifier: m[3]!,
    typeOnly: m[2] !== undefined,
  }));
}

describe('the layers of the source tree', () => {
  for (const [folder, reaches] of Object.entries(allowed)) {
    it(`keeps ${folder}/ to ${reaches.length ? reaches.map((f) => `${f}/`).join(', ') : 'itself'} and the generated contract`, async () => {
      const breaches: string[] = [];
      for (const file of await sourcesOf(folder)) {
        for (const { specifier } of await importsOf(file)) {
          const target = relative(root, resolve(dirname(file), specifier));
          const top = target.split('/')[0]!;
          if (top === folder || reaches.includes(top) || target.startsWith('api/generated/')) continue;
          breaches.push(`${relative(root, file)} imports ${target}`);
        }
      }
      assert.deepEqual(breaches, []);
    });
  }

  // Besides the clients, the scorer specs: the shape of a field that datasets and experiments are created with,
  // checked by the API where it is written and read by the experiment workflow.
  it('lets api/ start and cancel workflows only through their clients', async () => {
    const breaches: string[] = [];
    for (const file of await sourcesOf('api')) {
      for (const { specifier } of await importsOf(file)) {
        const target = relative(root, resolve(dirname(file), specifier));
        if (target.startsWith('workflows/') && !/^workflows\/[a-z-]+\/client\.js$/.test(target))
          breaches.push(`${relative(root, file)} imports ${target}`);
      }
    }
    assert.deepEqual(breaches, []);
  });
});
