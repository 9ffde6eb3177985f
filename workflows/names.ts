/** The task queue every workflow and activity runs on; each domain's workflow ids live in its client. */
export const TASK_QUEUE = 'agentplane';
