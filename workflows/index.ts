/**
 * Every workflow the worker runs: the one module the bundler loads.
 *
 * `workflows/` is arranged by domain, one folder each (`extraction/`, `maintenance/`, and so on):
 * - `workflow.ts`: deterministic orchestration only, with each activity's timeouts and retries stated
 *   where it is proxied;
 * - `activities.ts`: all of the domain's I/O, from a factory that receives its dependencies;
 * - `client.ts`: how the API and other domains start, signal or schedule it, and its workflow ids.
 * A new domain exports its workflows here and adds its activity factory to `activities.ts` beside this.
 */
export { extractFileWorkflow } from './extraction/workflow.js';
export { maintenanceWorkflow } from './maintenance/workflow.js';
export { agentRunWorkflow } from './runs/workflow.js';
export { networkRunWorkflow } from './networks/workflow.js';
export { qualityBackfillWorkflow, runJudgeWorkflow } from './quality/workflow.js';
export { memoryWorkflow } from './memory/workflow.js';
export { webhookDeliveryWorkflow } from './webhooks/workflow.js';
export { experimentWorkflow } from './experiments/workflow.js';
export { scheduledRunWorkflow } from './schedules/workflow.js';
