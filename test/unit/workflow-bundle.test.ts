import assert from 'node:assert/strict';
import { readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { workflowBundle } from '../../workflows/bundle.js';

const keptCode = fileURLToPath(new URL('../../workflows/bundle/workflows.js', import.meta.url));
const keptSources = fileURLToPath(new URL('../../workflows/bundle/sources.json', import.meta.url));
const aSource = fileURLToPath(new URL('../../workflows/runs/workflow.js', import.meta.url));

describe('the workflow bundle a worker loads', function () {
  this.timeout(60_000);

  it('is kept beside the compiled code and loaded as kept while its sources are unchanged', async () => {
    const first = await workflowBundle();
    const keptAt = (await stat(keptCode)).mtimeMs;
    const second = await workflowBundle();
    assert.equal(second.code, first.code);
    assert.equal((await stat(keptCode)).mtimeMs, keptAt, 'the kept bundle was made again');
    assert.ok(first.code.includes('agentRunWorkflow'), 'the bundle holds the run workflow');
    const sources = JSON.parse(await readFile(keptSources, 'utf8')) as { path: string }[];
    assert.ok(
      sources.some((source) => source.path === aSource),
      'the run workflow is among the sources the bundle was made from',
    );
  });

  it('is kept while files are added beside its sources, in the folders the bundler looked in', async () => {
    await workflowBundle();
    const keptAt = (await stat(keptCode)).mtimeMs;
    const beside = join(dirname(aSource), `beside-${process.pid}.txt`);
    await writeFile(beside, 'not a source');
    try {
      await workflowBundle();
      assert.equal((await stat(keptCode)).mtimeMs, keptAt, 'the kept bundle was made again');
    } finally {
      await rm(beside, { force: true });
    }
  });

  it('is made again once one of its sources has changed since', async () => {
    await workflowBundle();
    const { atime, mtime } = await stat(aSource);
    const changed = new Date(mtime.getTime() + 2_000);
    await utimes(aSource, atime, changed);
    try {
      await workflowBundle();
      const sources = JSON.parse(await readFile(keptSources, 'utf8')) as { path: string; mtimeMs: number }[];
      assert.equal(Math.round(sources.find((source) => source.path === aSource)?.mtimeMs ?? 0), changed.getTime());
    } finally {
      await utimes(aSource, atime, mtime);
      await workflowBundle();
    }
  });
});
