/**
 * Work in flight after a restore: the database knows of files still processing, runs still queued or in
 * progress and webhook deliveries whose retries had begun, but a Temporal namespace that was not restored to
 * the same moment (a fresh one) has none of their workflows. `agentplane recover` starts each one again whose
 * workflow the namespace lacks; the rest it leaves alone, so it is safe to run at any time, and again.
 *
 * A workflow started again picks up where the database says its work stands: an extraction keeps the pages
 * it stored, a run's completed steps are read back rather than made again (a model or tool call that was in
 * flight at the backup is made again, as after a worker's crash), a network run finds its hops by index.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Queryable } from '../records/db.js';
import { filesInFlight, recordExtractionStarted } from '../records/files.js';
import { recordRunWorkflowStarted, runsInFlight } from '../records/runs.js';
import { forgetRetriesStarted, retriesStarted } from '../records/webhook-deliveries.js';
import { extractionWorkflowId, startExtraction } from './extraction/client.js';
import { networkRunWorkflowId } from './networks/client.js';
import { runWorkflowId, startRunOf } from './runs/client.js';
import { deliveryWorkflowId } from './webhooks/client.js';

export interface Recovered {
  /** Items whose workflow was looked for. */
  checked: number;
  files: number;
  runs: number;
  /** Deliveries handed back to the dispatcher, which starts their retries again. */
  webhookDeliveries: number;
}

/** Whether the namespace has a workflow under `workflowId`, running or ended. */
async function exists(client: Client, workflowId: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

export async function restartLostWork(db: Queryable, client: Client): Promise<Recovered> {
  const recovered: Recovered = { checked: 0, files: 0, runs: 0, webhookDeliveries: 0 };

  for (const file of await filesInFlight(db)) {
    recovered.checked++;
    if (await exists(client, extractionWorkflowId(file.id))) continue;
    await startExtraction(client, file.id, file.projectId);
    await recordExtractionStarted(db, file.id);
    recovered.files++;
  }

  for (const run of await runsInFlight(db)) {
    recovered.checked++;
    if (await exists(client, run.network ? networkRunWorkflowId(run.id) : runWorkflowId(run.id))) continue;
    await startRunOf(client, run);
    await recordRunWorkflowStarted(db, run.id);
    recovered.runs++;
  }

  // A delivery whose first attempt failed and whose retries' workflow is gone goes back to the dispatcher.
  for (const { id } of await retriesStarted(db)) {
    recovered.checked++;
    if (await exists(client, deliveryWorkflowId(id))) continue;
    await forgetRetriesStarted(db, id);
    recovered.webhookDeliveries++;
  }
  return recovered;
}
