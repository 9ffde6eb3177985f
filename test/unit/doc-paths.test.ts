import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The documents a reader follows through the repository, paths relative to its root. */
const documents = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

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
    .map((word) =>
      word
        .replace(/^[("']+/, '')
        .replace(/[),;'"]+$/, '')
        .replace(/[:#].*$/, ''),
    )
    .filter((word) => word.includes('/') && topFolders.has(word.split('/')[0]!))
    .filter((word) => !/[<>*{}…$]|NNN/.test(word))
    .filter((word) => !ignored.some((path) => word === path || word.startsWith(`${path}/`)));
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  for (const [, heading] of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    let anchor = slug;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${slug}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

/** The local targets of a document's Markdown links, as `file#anchor` relative to the repository. */
function linksIn(document: string, text: string): { file: string; anchor?: string }[] {
  const prose = text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/.test(target))
    .map((target) => {
      const [path, anchor] = target.split('#') as [string, string | undefined];
      return { file: path === '' ? document : join(dirname(document), path), anchor };
    });
}

describe('the paths the documents name', () => {
  for (const document of documents) {
    it(`finds every repository path ${document} names`, () => {
      const missing = [...new Set(pathsNamedIn(readFileSync(join(root, document), 'utf8')))].filter(
        (path) => !existsSync(join(root, path)),
      );
      assert.deepEqual(missing, [], `${document} names paths that do not exist`);
    });

    it(`finds the file and the heading of every link in ${document}`, () => {
      const broken = linksIn(document, readFileSync(join(root, document), 'utf8')).filter(
        ({ file, anchor }) =>
          !existsSync(join(root, file)) || (anchor !== undefined && !anchorsOf(readFileSync(join(root, file), 'utf8')).has(anchor)),
      );
      assert.deepEqual(broken, [], `${document} links to files or headings that do not exist`);
    });
  }
});
