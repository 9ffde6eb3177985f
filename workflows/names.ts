/** The task queue every workflow and activity runs on; each domain's workflow ids live in its client. */
export const TASK_QUEUE = 'agentplane';
/** The CPU-heavy extraction stages (PDF, OCR, speech, entities) run here, with bounded concurrency. */
export const EXTRACTION_TASK_QUEUE = 'agentplane.extraction';
/** Webhook delivery attempts run here, so that receivers slow to answer never hold the slots runs need. */
export const WEBHOOK_TASK_QUEUE = 'agentplane.webhooks';

/**
 * A workflow's priority: its project as the fairness key, which its activities and child workflows inherit.
 * With fairness on in Temporal's matching service (`matching.enableFairness`), each task queue dispatches to
 * projects in turn, so one project's backlog of runs, extractions or webhook retries waits behind itself and not in front of
 * another's (`agentplane dev` turns it on: cli/embedded.ts). Without it, the key is carried and ignored.
 */
export const fairAmongProjects = (projectId: string) => ({ fairnessKey: projectId });
