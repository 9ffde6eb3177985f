import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startTemporal } from '../../cli/embedded.js';
import { eventually } from '../support/eventually.js';
import { runCli } from '../support/processes.js';
import { postgres, scratch } from '../support/services.js';

describe('agentplane worker logs while Temporal is down', function () {
  this.timeout(120_000);

  it('writes every line as JSON, the Temporal core’s connection retries included', async () => {
    const blobDir = join(await scratch, 'worker-logs-blobs');
    await mkdir(blobDir, { recursive: true });
    // A Temporal server of its own, to stop without disturbing the other suites.
    const server = await startTemporal();
    const worker = runCli('worker', {
      DATABASE_URL: (await postgres()).url,
      TEMPORAL_ADDRESS: server.address,
      AGENTPLANE_BLOB_DIR: blobDir,
      LOG_LEVEL: 'info',
    });
    try {
      await eventually(() => assert.match(worker.output(), /Agentplane worker running/), {
        timeoutMs: 60_000,
        message: 'the worker did not start',
      });
      await server.stop();
      await eventually(() => assert.match(worker.output(), /retried/), {
        timeoutMs: 60_000,
        message: 'the Temporal core logged no retries',
      });

      const lines = worker
        .output()
        .split('\n')
        .filter((line) => line.trim() !== '');
      const unstructured = lines.filter((line) => {
        try {
          return typeof JSON.parse(line) !== 'object';
        } catch {
          return true;
        }
      });
      assert.deepEqual(unstructured, [], 'every line is a JSON object');
      const retry = lines.map((line) => JSON.parse(line)).find((entry) => /retried/.test(entry.msg));
      assert.equal(retry.level, 40, 'core retries are warnings');
      assert.equal(retry.component, 'temporal');
    } finally {
      worker.child.kill('SIGKILL');
      await worker.exited;
      await server.stop();
    }
  });
});
