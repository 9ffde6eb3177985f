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
import { recordExtractionStarted } from '../records/files.js';
import { recordRunWorkflowStarted } from '../records/runs.js';
import { extractionWorkflowId, startExtraction } from './extraction/client.js';
import { networkRunWorkflowId, startNetworkRunWorkflow } from './networks/client.js';
import { runWorkflowId, startRunWorkflow } from './runs/client.js';
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

  const { rows: files } = await db.query<{ id: string; project_id: string }>(
    `SELECT id, project_id FROM files WHERE status = 'processing' ORDER BY created_at, id`,
  );
  for (const { id, project_id } of files) {
    recovered.checked++;
    if (await exists(client, extractionWorkflowId(id))) continue;
    await startExtraction(client, id, project_id);
    await recordExtractionStarted(db, id);
    recovered.files++;
  }

  // A network's hops are its network run's to start again.
  const { rows: runs } = await db.query<{ id: string; project_id: string; network: boolean; worker_pool: string | null }>(
    `SELECT r.id, r.project_id, r.network_id IS NOT NULL AS network, v.worker_pool
     FROM runs r LEFT JOIN network_versions v ON v.network_id = r.network_id AND v.version = r.network_version
     WHERE r.status IN ('queued', 'in_progress') AND r.parent_run_id IS NULL ORDER BY r.created_at, r.id`,
  );
  for (const run of runs) {
    recovered.checked++;
    if (await exists(client, run.network ? networkRunWorkflowId(run.id) : runWorkflowId(run.id))) continue;
    await (run.network
      ? startNetworkRunWorkflow(client, run.id, run.project_id, run.worker_pool ?? undefined)
      : startRunWorkflow(client, run.id, run.project_id));
    await recordRunWorkflowStarted(db, run.id);
    recovered.runs++;
  }

  // A delivery whose first attempt failed and whose retries' workflow is gone goes back to the dispatcher.
  const { rows: deliveries } = await db.query<{ id: string }>(
    `SELECT id FROM webhook_deliveries WHERE status = 'pending' AND started_at IS NOT NULL ORDER BY created_at, id`,
  );
  for (const { id } of deliveries) {
    recovered.checked++;
    if (await exists(client, deliveryWorkflowId(id))) continue;
    await db.query(`UPDATE webhook_deliveries SET started_at = NULL WHERE id = $1 AND status = 'pending'`, [id]);
    recovered.webhookDeliveries++;
  }
  return recovered;
}
