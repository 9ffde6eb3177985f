/** The task queue every workflow and activity runs on; each domain's workflow ids live in its client. */
export const TASK_QUEUE = 'agentplane';
/** The CPU-heavy extraction stages (PDF, OCR, speech, entities) run here, with bounded concurrency. */
export const EXTRACTION_TASK_QUEUE = 'agentplane.extraction';
/** Webhook delivery attempts run here, so that receivers slow to answer never hold the slots runs need. */
export const WEBHOOK_TASK_QUEUE = 'agentplane.webhooks';
