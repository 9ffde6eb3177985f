/**
 * The workflow code a worker loads, bundled with webpack once and kept beside the compiled code
 * (`dist/workflows/bundle/`), so that a worker starts without bundling: `npm run build` makes it, and a worker
 * that finds it missing or older than any of its sources makes it again (and keeps it, where it may write).
 */
import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const workflowsPath = fileURLToPath(new URL('./index.js', import.meta.url));
const codePath = fileURLToPath(new URL('./bundle/workflows.js', import.meta.url));
const sourcesPath = fileURLToPath(new URL('./bundle/sources.json', import.meta.url));

/** A file the bundle was made from, as it was then. */
interface SourceStamp {
  path: string;
  size: number;
  mtimeMs: number;
}

/**
 * The file's stamp; null when it is gone, or a directory (the bundler lists those it looked in, whose times
 * change whenever any file is added there).
 */
async function stampOf(path: string): Promise<SourceStamp | null> {
  const found = await stat(path).catch(() => null);
  return found?.isFile() ? { path, size: found.size, mtimeMs: found.mtimeMs } : null;
}

/** The kept bundle, when every file it was made from is as it was; otherwise undefined. */
async function keptBundle(): Promise<WorkflowBundle | undefined> {
  try {
    const sources = JSON.parse(await readFile(sourcesPath, 'utf8')) as SourceStamp[];
    // A bundle that names none of its sources could never be found out of date.
    if (sources.length === 0) return undefined;
    const now = await Promise.all(sources.map((source) => stampOf(source.path)));
    if (now.some((stamp, i) => stamp?.size !== sources[i]!.size || stamp?.mtimeMs !== sources[i]!.mtimeMs)) return undefined;
    return { code: await readFile(codePath, 'utf8') };
  } catch {
    return undefined;
  }
}

/** Bundles the workflows, and says which files went into the bundle. */
async function makeBundle(): Promise<{ code: string; sources: string[] }> {
  let sources: string[] = [];
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    logger: quietBundlerLogger,
    webpackConfigHook: (config) => ({
      ...config,
      plugins: [
        ...(config.plugins ?? []),
        {
          apply: (compiler) =>
            compiler.hooks.done.tap('agentplane-bundle-sources', (stats) => {
              sources = [...stats.compilation.fileDependencies].filter((path) => path.startsWith('/'));
            }),
        },
      ],
    }),
  });
  return { code, sources };
}

/** Keeps a bundle for the next start; written whole or not at all, so that a start never reads half of one. */
async function keep(code: string, sources: string[]): Promise<void> {
  // The bundler's own entry point is made in memory and has no file.
  const stamps = (await Promise.all(sources.map(stampOf))).filter((stamp) => stamp !== null);
  await mkdir(dirname(codePath), { recursive: true });
  const suffix = `.${process.pid}.tmp`;
  await writeFile(codePath + suffix, code);
  await writeFile(sourcesPath + suffix, JSON.stringify(stamps));
  await rename(codePath + suffix, codePath);
  await rename(sourcesPath + suffix, sourcesPath);
}

/** The workflow bundle: the kept one while it is current, else a new one, kept for the next start. */
export async function workflowBundle(): Promise<WorkflowBundle> {
  const kept = await keptBundle();
  if (kept) return kept;
  const { code, sources } = await makeBundle();
  // A read-only install (an image with its bundle made at build) still starts; it only bundles again.
  await keep(code, sources).catch(() => undefined);
  return { code };
}

const quietBundlerLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string, meta?: unknown) => console.warn(message, meta ?? ''),
  error: (message: string, meta?: unknown) => console.error(message, meta ?? ''),
};
