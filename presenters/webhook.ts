import type { components } from '../api/generated/openapi.js';
import type { WebhookDeliveryRecord, WebhookEndpointRecord } from '../records/webhooks.js';
import { unixSeconds } from './time.js';

export type WebhookEndpointObject = components['schemas']['WebhookEndpoint'];

/** Never the secret: it is shown once, by presentEndpointWithSecret. */
export function presentEndpoint(endpoint: WebhookEndpointRecord): WebhookEndpointObject {
  return {
    id: endpoint.id,
    object: 'webhook_endpoint',
    url: endpoint.url,
    event_types: endpoint.event_types as WebhookEndpointObject['event_types'],
    description: endpoint.description,
    metadata: endpoint.metadata,
    status: endpoint.status,
    disabled_reason: endpoint.disabled_reason,
    consecutive_failures: endpoint.consecutive_failures,
    created_at: unixSeconds(endpoint.created_at),
    updated_at: unixSeconds(endpoint.updated_at),
  };
}

/** The creating and rotating responses alone carry the signing secret. */
export function presentEndpointWithSecret(
  endpoint: WebhookEndpointRecord,
  secret: string,
): components['schemas']['WebhookEndpointWithSecret'] {
  return { ...presentEndpoint(endpoint), secret };
}

export function presentDeletedEndpoint(id: string): components['schemas']['DeletedWebhookEndpoint'] {
  return { id, object: 'webhook_endpoint', deleted: true };
}

export function presentDelivery(delivery: WebhookDeliveryRecord): components['schemas']['WebhookDelivery'] {
  return {
    id: delivery.id,
    object: 'webhook_delivery',
    endpoint_id: delivery.endpoint_id,
    event_id: delivery.event_id,
    event_type: delivery.event_type as components['schemas']['EventType'],
    redelivery_of: delivery.redelivery_of,
    status: delivery.status,
    attempts: delivery.attempts.map((a) => ({
      attempt: a.attempt,
      created_at: unixSeconds(a.created_at),
      response_status: a.response_status,
      error: a.error,
      duration_ms: a.duration_ms,
    })),
    created_at: unixSeconds(delivery.created_at),
    completed_at: unixSeconds(delivery.completed_at),
  };
}
