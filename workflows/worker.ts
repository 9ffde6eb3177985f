/** The worker process: runs the workflows and activities on the `agentplane` task queue. */
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import type { Db } from '../records/db.js';
import type { BlobStore } from '../records/blobs/store.js';
import { createActivities } from './activities.js';
import { TASK_QUEUE } from './names.js';

export interface WorkerSettings {
  db: Db;
  blobs: BlobStore;
  temporalAddress: string;
  namespace: string;
  /** A prebuilt workflow bundle; built here when absent. */
  workflowBundle?: WorkflowBundleWithSourceMap;
}

export const workflowsPath = fileURLToPath(new URL('./workflows.js', import.meta.url));

export async function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger });
}

export async function createWorker(settings: WorkerSettings): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: settings.temporalAddress });
  try {
    const worker = await Worker.create({
      connection,
      namespace: settings.namespace,
      taskQueue: TASK_QUEUE,
      workflowBundle: settings.workflowBundle ?? (await bundleWorkflows()),
      activities: createActivities(settings.db, settings.blobs),
      shutdownGraceTime: '10 seconds',
    });
    return { worker, connection };
  } catch (err) {
    await connection.close();
    throw err;
  }
}

const quietBundlerLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string, meta?: unknown) => console.warn(message, meta ?? ''),
  error: (message: string, meta?: unknown) => console.error(message, meta ?? ''),
};
