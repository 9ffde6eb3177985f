/** Workflow code: a run on a thread, as it ends, wakes the thread's next run waiting its turn (an agent's or a network's). */
import { getExternalWorkflowHandle } from '@temporalio/workflow';
import { ADMIT_SIGNAL } from './ids.js';

// One that misses this is woken by maintenance, or looks on its own.
export async function wakeOnThread(ending: { threadNext?: string | null }): Promise<void> {
  if (!ending.threadNext) return;
  await getExternalWorkflowHandle(ending.threadNext)
    .signal(ADMIT_SIGNAL)
    .catch(() => undefined);
}
