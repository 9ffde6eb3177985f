/** Webhook delivery settings and how a delivery's retries' workflow is started, for the API, the dispatcher and tests. */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { fairAmongProjects, TASK_QUEUE } from '../names.js';
import type { webhookDeliveryWorkflow } from './workflow.js';

export interface WebhookSettings {
  /** AGENTPLANE_WEBHOOK_ALLOW_PRIVATE: endpoints may be on private, loopback and link-local addresses. */
  allowPrivate: boolean;
  /** AGENTPLANE_WEBHOOK_RETRY_INITIAL_MS: the wait before the second attempt, doubled before each next one (at most 4 h). */
  retryInitialMs: number;
  /** AGENTPLANE_WEBHOOK_MAX_ATTEMPTS: attempts per delivery, the first included. */
  maxAttempts: number;
  /** AGENTPLANE_WEBHOOK_DISABLE_AFTER: failed deliveries in a row (each after all its attempts) that disable an endpoint. */
  disableAfter: number;
}

/** About 17 hours of attempts: 30 s, 1, 2, 4, 8, 16, 32 and 64 min, 2 h 8 min, then every 4 h. */
export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = { allowPrivate: false, retryInitialMs: 30_000, maxAttempts: 12, disableAfter: 5 };

/** How long after a rotation the previous secret still signs deliveries. */
export const SECRET_GRACE_SECONDS = 24 * 60 * 60;

export interface DeliveryInput {
  deliveryId: string;
  retry: { initialIntervalMs: number; maximumAttempts: number; disableAfter: number };
  /** Attempts made before the workflow: the dispatcher's first. Absent (none) in workflows started before it made them. */
  attemptsMade?: number;
}

/** One workflow per delivery that failed its first attempt: a dispatcher that starts it again (after a restart) finds it there. */
export function deliveryWorkflowId(deliveryId: string): string {
  return `webhook-delivery-${deliveryId}`;
}

/**
 * Idempotent: a delivery whose workflow exists, running or ended, is left to it. Its attempts are dispatched fairly
 * among projects (the project is the fairness key), so that one project's thousand retries do not queue in front
 * of another's.
 */
export async function startRetries(
  client: Client,
  delivery: { id: string; projectId: string },
  settings: WebhookSettings,
  attemptsMade: number,
): Promise<void> {
  const deliveryId = delivery.id;
  try {
    await client.workflow.start<typeof webhookDeliveryWorkflow>('webhookDeliveryWorkflow', {
      taskQueue: TASK_QUEUE,
      workflowId: deliveryWorkflowId(deliveryId),
      args: [
        {
          deliveryId,
          retry: { initialIntervalMs: settings.retryInitialMs, maximumAttempts: settings.maxAttempts, disableAfter: settings.disableAfter },
          attemptsMade,
        },
      ],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      priority: fairAmongProjects(delivery.projectId),
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
