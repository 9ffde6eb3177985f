/** Registering a webhook endpoint: its URL, the event types it receives (or every one), a description. */
import { useState } from 'preact/hooks';
import { api, unwrap, type Schemas } from '../api';
import { EVENT_TYPES, type EventType } from './admin-enums';

export function WebhookForm({
  onCreated,
  onCancel,
}: {
  onCreated: (endpoint: Schemas['WebhookEndpointWithSecret']) => void;
  onCancel: () => void;
}) {
  const [every, setEvery] = useState(false);
  const [chosen, setChosen] = useState<Set<EventType>>(new Set());
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  function toggle(type: EventType, on: boolean) {
    const next = new Set(chosen);
    if (on) next.add(type);
    else next.delete(type);
    setChosen(next);
  }

  async function submit(event: Event) {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const url = (form.elements.namedItem('url') as HTMLInputElement).value.trim();
    const description = (form.elements.namedItem('description') as HTMLInputElement).value.trim();
    const event_types: Schemas['WebhookEventTypes'] = every ? ['*'] : EVENT_TYPES.filter((type) => chosen.has(type));
    if (event_types.length === 0) {
      setError('Choose at least one event type, or every event.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const endpoint = unwrap(await api.POST('/v1/webhooks', { body: { url, event_types, ...(description ? { description } : {}) } }));
      onCreated(endpoint);
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="webhook-form-title">
      <h2 id="webhook-form-title">New endpoint</h2>
      <div class="field">
        <label for="webhook-url">Endpoint URL</label>
        <input id="webhook-url" name="url" type="url" required maxLength={2048} placeholder="https://example.com/agentplane-events" />
      </div>
      <fieldset>
        <legend>Event types</legend>
        <label class="check">
          <input type="checkbox" checked={every} onChange={(e) => setEvery(e.currentTarget.checked)} /> Every event (<code>*</code>)
        </label>
        <div class="checks">
          {EVENT_TYPES.map((type) => (
            <label class="check" key={type}>
              <input
                type="checkbox"
                disabled={every}
                checked={every || chosen.has(type)}
                onChange={(e) => toggle(type, e.currentTarget.checked)}
              />{' '}
              <code>{type}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <div class="field">
        <label for="webhook-description">Description (optional)</label>
        <input id="webhook-description" name="description" maxLength={512} />
      </div>
      <div class="row">
        <button type="submit" disabled={busy}>
          Create endpoint
        </button>
        <button type="button" class="plain" onClick={onCancel}>
          Cancel
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
