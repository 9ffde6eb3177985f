/** One webhook endpoint: what it receives, enabling, rotating its secret, deleting it, and its delivery log. */
import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { ConfirmButton } from '../components/admin-confirm';
import { WebhookDeliveries } from '../components/admin-webhook-deliveries';
import { SecretOnce } from '../components/admin-secret';
import { EndpointStatus, EventTypes } from '../components/admin-webhook-parts';
import { Async } from '../components/states';
import { formatCount, formatTime } from '../format';
import { useApi } from '../use-api';
import './admin.css';

export default function WebhookView({ params }: { params: { id: string } }) {
  const endpoint = useApi(
    (signal) => api.GET('/v1/webhooks/{id}', { params: { path: { id: params.id } }, signal }).then(unwrap),
    [params.id],
  );
  return (
    <>
      <p>
        <Link href="/webhooks">← Webhooks</Link>
      </p>
      <Async loaded={endpoint} what="the webhook endpoint">
        {(data) => <Endpoint endpoint={data} changed={endpoint.reload} />}
      </Async>
    </>
  );
}

function Endpoint({ endpoint, changed }: { endpoint: Schemas['WebhookEndpoint']; changed: () => void }) {
  const [, navigate] = useLocation();
  const [secret, setSecret] = useState<string>();
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();

  async function act(what: () => Promise<void>) {
    setError(undefined);
    try {
      await what();
    } catch (failure) {
      setError((failure as Error).message);
    }
  }
  const toggle = () =>
    act(async () => {
      const next = endpoint.status === 'enabled' ? 'disabled' : 'enabled';
      unwrap(await api.PATCH('/v1/webhooks/{id}', { params: { path: { id: endpoint.id } }, body: { status: next } }));
      setStatus(`The endpoint is ${next}.`);
      changed();
    });
  const rotate = () =>
    act(async () => {
      const rotated = unwrap(await api.POST('/v1/webhooks/{id}/rotate_secret', { params: { path: { id: endpoint.id } } }));
      setSecret(rotated.secret);
      setStatus('The secret was rotated. For 24 hours deliveries are signed by the new and the previous secret.');
    });
  const remove = () =>
    act(async () => {
      unwrap(await api.DELETE('/v1/webhooks/{id}', { params: { path: { id: endpoint.id } } }));
      navigate('/webhooks');
    });

  return (
    <>
      <h1>
        Webhook <span class="url">{endpoint.url}</span>
      </h1>
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code class="id">{endpoint.id}</code>
        </dd>
        <dt>Status</dt>
        <dd>
          <EndpointStatus endpoint={endpoint} />
        </dd>
        <dt>Events</dt>
        <dd>
          <EventTypes types={endpoint.event_types} />
        </dd>
        <dt>Description</dt>
        <dd>{endpoint.description ?? <span class="muted">—</span>}</dd>
        <dt>Failed deliveries in a row</dt>
        <dd>{formatCount(endpoint.consecutive_failures)}</dd>
        <dt>Created</dt>
        <dd>{formatTime(endpoint.created_at)}</dd>
        <dt>Changed</dt>
        <dd>{formatTime(endpoint.updated_at)}</dd>
      </dl>
      {endpoint.status === 'disabled' && (
        <p class="notice">
          {endpoint.disabled_reason === 'failing'
            ? 'The platform disabled this endpoint after its deliveries kept failing. It receives nothing until it is enabled again.'
            : 'This endpoint is disabled: it receives nothing until it is enabled again.'}
        </p>
      )}
      <div class="row actions">
        <button type="button" class="plain" onClick={() => void toggle()}>
          {endpoint.status === 'enabled' ? 'Disable' : 'Enable'}
        </button>
        <button type="button" class="plain" onClick={() => void rotate()}>
          Rotate secret
        </button>
        <ConfirmButton
          label="Delete"
          confirmLabel="Delete endpoint"
          question={<>Delete this endpoint and its delivery log? Deliveries in progress stop.</>}
          onConfirm={remove}
        />
      </div>
      <p class="muted" role="status" aria-live="polite">
        {status}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {secret && <SecretOnce label="New signing secret" secret={secret} onDone={() => setSecret(undefined)} />}
      <WebhookDeliveries endpoint={endpoint} />
    </>
  );
}
