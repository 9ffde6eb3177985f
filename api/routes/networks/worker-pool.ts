/**
 * Which worker pool a network may name. A pool's workers are someone's dedicated capacity, with their own
 * network reach, so a caller names only a pool the operator runs for the caller's project
 * (AGENTPLANE_WORKER_POOLS), and only the Kubernetes controller's key names the pools it runs itself
 * (`network.<namespace>.<name>`, one per AgentNetwork).
 */
import type { Caller } from '../../context.js';
import { InvalidRequestError } from '../../errors.js';

/** A pool the operator runs: workers polling `queue`, for the runs of one project. */
export interface DeclaredWorkerPool {
  queue: string;
  projectId: string;
}

/** The prefix of the task queues the controller's pools poll; no declared pool may use it. */
export const CONTROLLER_POOL_PREFIX = 'network.';

export function checkWorkerPool(caller: Caller, pools: readonly DeclaredWorkerPool[], queue: string | null | undefined): void {
  if (queue === null || queue === undefined) return;
  if (caller.controller && queue.startsWith(CONTROLLER_POOL_PREFIX)) return;
  if (pools.some((pool) => pool.queue === queue && pool.projectId === caller.projectId)) return;
  throw InvalidRequestError(
    'unknown_worker_pool',
    `No worker pool '${queue}' runs for this project: worker_pool names a pool the operator runs for it, or null for the shared workers.`,
    'worker_pool',
  );
}
