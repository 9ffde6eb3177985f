/**
 * Root hooks (registered in .mocharc.json): a test process stops the browser, the shared API, the services and the
 * workflow test server once it has run its last file.
 *
 * A serial run is one process, and its root `afterAll` runs once, at the end. Under `--parallel` each worker
 * process runs many files and its root hooks run around every file, so a worker keeps what it started for its
 * next files and stops it when the pool ends the worker instead.
 */
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { stopSharedApi } from './api.js';
import { closeBrowser } from './browser.js';
import { scratch, stopServices } from './services.js';
import { stopWorkflowEnvironment } from './workflow-environment.js';
import { LOOPBACK_NETWORKS } from './processes.js';

// The workers the tests run in this process reach loopback only.
process.env.AGENTPLANE_OUTBOUND_NETWORKS = LOOPBACK_NETWORKS;

async function stopEverything(): Promise<void> {
  await closeBrowser();
  await stopSharedApi();
  await stopServices();
  await stopWorkflowEnvironment();
}

/** Set by mocha in the processes of a parallel run. */
const inParallelWorker = process.env.MOCHA_WORKER_ID !== undefined;

if (inParallelWorker) {
  // The pool mocha's workers belong to: it asks a worker to end and calls this first, then after a second
  // sends SIGTERM, which must not cut the stopping short (a killed worker would leave MinIO running).
  const mochaRequire = createRequire(createRequire(import.meta.url).resolve('mocha'));
  const workerpool = mochaRequire('workerpool') as typeof import('workerpool');
  workerpool.worker(undefined, { onTerminate: stopEverything });
  process.on('SIGTERM', () => setTimeout(() => process.exit(1), 120_000).unref());
}

export const mochaHooks = inParallelWorker
  ? {}
  : {
      async afterAll(this: Mocha.Context) {
        this.timeout(120_000);
        await stopEverything();
      },
    };

/**
 * Runs once, in the process mocha was started in. Under `--parallel` that process runs no test, but loading
 * these hooks made it a scratch directory; in a serial run the root `afterAll` has removed it already.
 */
export async function mochaGlobalTeardown(): Promise<void> {
  await rm(await scratch, { recursive: true, force: true });
}
