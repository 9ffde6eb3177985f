import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The documents a reader follows through the repository, paths relative to its root. */
const documents = ['README.md', 'CONTRIBUTING.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** Paths git ignores (`dist/`, `.agentplane/`, `bench/results/`…) are made by a build or a run, not kept. */
const ignored = readFileSync(join(root, '.gitignore'), 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#') && !line.includes('*'))
  .map((line) => line.replace(/^\//, '').replace(/\/$/, ''));

/** The folders at the top of the repository: a word in backticks that starts with one of them is a path. */
const topFolders = new Set(
  readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && !ignored.includes(entry.name))
    .map((entry) => entry.name),
);

/**
 * Every repository path a document names in inline code, as `folder/…`, with any `:line` or `#anchor` after
 * it dropped. Placeholders (`<type>`, `NNN`), globs and ellipses name files to create or families of files,
 * and are left out.
 */
function pathsNamedIn(text: string): string[] {
  const prose = text.replace(/^```[\s\S]*?^```/gm, '');
  const words = [...prose.matchAll(/`([^`\n]+)`/g)].flatMap((m) => m[1]!.split(/\s+/));
  return words
    .map((word) => word.replace(/^[("']+/, '').replace(/[),;'"]+$/, '').replace(/[:#].*$/, ''))
    .filter((word) => word.includes('/') && topFolders.has(word.split('/')[0]!))
    .filter((word) => !/[<>*{}…$]|NNN/.test(word))
    .filter((word) => !ignored.some((path) => word === path || word.startsWith(`${path}/`)));
}

describe('the paths the documents name', () => {
  for (const document of documents) {
    it(`finds every repository path ${document} names`, () => {
      const missing = [...new Set(pathsNamedIn(readFileSync(join(root, document), 'utf8')))].filter((path) => !existsSync(join(root, path)));
      assert.deepEqual(missing, [], `${document} names paths that do not exist`);
    });
  }
});
