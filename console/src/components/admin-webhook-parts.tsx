/** How the webhook pages show an endpoint's event types and whether it is enabled. */
import type { Schemas } from '../api';

export function EventTypes({ types }: { types: Schemas['WebhookEventTypes'] }) {
  if (types.includes('*')) return <span>every event</span>;
  return (
    <ul class="tags">
      {types.map((type) => (
        <li key={type}>
          <code>{type}</code>
        </li>
      ))}
    </ul>
  );
}

export function EndpointStatus({ endpoint }: { endpoint: Schemas['WebhookEndpoint'] }) {
  if (endpoint.status === 'enabled') return <span class="status status-enabled">enabled</span>;
  return <span class="status status-disabled">disabled{endpoint.disabled_reason === 'failing' ? ': deliveries kept failing' : ''}</span>;
}
