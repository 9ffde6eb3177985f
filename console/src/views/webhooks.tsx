/** Webhook endpoints: the project's list, and a form to register one (its signing secret is shown once). */
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { Pager, useCursor } from '../components/admin-pager';
import { SecretOnce } from '../components/admin-secret';
import { WebhookForm } from '../components/admin-webhook-form';
import { EndpointStatus, EventTypes } from '../components/admin-webhook-parts';
import { Async, EmptyState } from '../components/states';
import { formatCount, formatTime } from '../format';
import { useApi } from '../use-api';
import './admin.css';

export default function WebhooksView() {
  const cursor = useCursor();
  const endpoints = useApi(
    (signal) => api.GET('/v1/webhooks', { params: { query: { limit: 20, ...cursor } }, signal }).then(unwrap),
    [cursor.after, cursor.before],
  );
  const [created, setCreated] = useState<Schemas['WebhookEndpointWithSecret']>();
  const [adding, setAdding] = useState(false);

  return (
    <>
      <h1>Webhooks</h1>
      <p class="muted">Endpoints the project's events are POSTed to, signed by each endpoint's secret (Standard Webhooks).</p>
      {created?.secret && (
        <SecretOnce label={`Signing secret of ${created.url}`} secret={created.secret} onDone={() => setCreated(undefined)} />
      )}
      {adding ? (
        <WebhookForm
          onCancel={() => setAdding(false)}
          onCreated={(endpoint) => {
            setAdding(false);
            setCreated(endpoint);
            endpoints.reload();
          }}
        />
      ) : (
        <p>
          <button type="button" onClick={() => setAdding(true)}>
            Add endpoint
          </button>
        </p>
      )}
      <Async loaded={endpoints} what="webhook endpoints">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            <EmptyState
              title="No webhook endpoints yet"
              method="POST"
              path="/v1/webhooks"
              body={{ url: 'https://example.com/agentplane-events', event_types: ['run.completed', 'run.failed'] }}
            >
              <p>Register an endpoint with the form above, or with the API:</p>
            </EmptyState>
          ) : (
            <>
              <table class="listing">
                <caption>Endpoints</caption>
                <thead>
                  <tr>
                    <th scope="col">URL</th>
                    <th scope="col">Events</th>
                    <th scope="col">Status</th>
                    <th scope="col" class="number">
                      Failures in a row
                    </th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((endpoint) => (
                    <tr key={endpoint.id}>
                      <th scope="row">
                        <Link href={`/webhooks/${encodeURIComponent(endpoint.id)}`} class="url">
                          {endpoint.url}
                        </Link>
                        {endpoint.description && <div class="muted">{endpoint.description}</div>}
                      </th>
                      <td>
                        <EventTypes types={endpoint.event_types} />
                      </td>
                      <td>
                        <EndpointStatus endpoint={endpoint} />
                      </td>
                      <td class="number">{formatCount(endpoint.consecutive_failures)}</td>
                      <td>{formatTime(endpoint.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} what="webhook endpoints" />
            </>
          )
        }
      </Async>
    </>
  );
}
