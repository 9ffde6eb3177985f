/** Starting and cancelling experiment workflows, and checking the scorers they take, for the API. */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { fairAmongProjects, TASK_QUEUE } from '../names.js';
import type { experimentWorkflow } from './workflow.js';
import { experimentWorkflowId } from './ids.js';

export { experimentWorkflowId };
// What the API checks a dataset's or an experiment's scorers with: the scorers an experiment's workflow applies.
export {
  checkScorerSpecs,
  defaultScorers,
  MAX_RUBRIC_CHARS,
  modelsNamed,
  SIMILARITY_METRICS,
  STRING_CHECK_OPERATIONS,
  type ScorerSpec,
  type SimilarityMetric,
  type StringCheckOperation,
} from './scorer-specs.js';

/** Idempotent: an experiment whose workflow already exists keeps it. Its item runs take the project's fairness key. */
export async function startExperimentWorkflow(client: Client, experimentId: string, projectId: string): Promise<void> {
  await client.workflow.start<typeof experimentWorkflow>('experimentWorkflow', {
    taskQueue: TASK_QUEUE,
    workflowId: experimentWorkflowId(experimentId),
    args: [{ experimentId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    priority: fairAmongProjects(projectId),
  });
}

/** Asks the experiment's workflow to cancel (its item runs with it); false when there is none. */
export async function cancelExperimentWorkflow(client: Client, experimentId: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(experimentWorkflowId(experimentId)).cancel();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
