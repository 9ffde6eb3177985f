/** A webhook endpoint's delivery log: each delivery's event, status and attempts, and sending one again. */
import { useState } from 'preact/hooks';
import { api, unwrap, type Schemas } from '../api';
import { Pager, useCursor } from './admin-pager';
import { IdLink } from './links';
import { Async, EmptyState } from './states';
import { formatDuration, formatTime } from '../format';
import { useApi } from '../use-api';

type Delivery = Schemas['WebhookDelivery'];

export function WebhookDeliveries({ endpoint }: { endpoint: Schemas['WebhookEndpoint'] }) {
  const cursor = useCursor();
  const deliveries = useApi(
    (signal) =>
      api
        .GET('/v1/webhooks/{id}/deliveries', { params: { path: { id: endpoint.id }, query: { limit: 20, ...cursor } }, signal })
        .then(unwrap),
    [endpoint.id, cursor.after, cursor.before],
  );
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();

  async function redeliver(delivery: Delivery) {
    setError(undefined);
    try {
      const sent = unwrap(
        await api.POST('/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', {
          params: { path: { id: endpoint.id, delivery_id: delivery.id } },
        }),
      );
      setStatus(`Event ${delivery.event_id} is being sent again, as delivery ${sent.id}.`);
      deliveries.reload();
    } catch (failure) {
      setError((failure as Error).message);
    }
  }

  return (
    <section aria-labelledby="deliveries-title">
      <div class="row">
        <h2 id="deliveries-title">Deliveries</h2>
        <button type="button" class="plain" onClick={deliveries.reload}>
          Refresh
        </button>
      </div>
      <p class="muted" role="status" aria-live="polite">
        {status}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <Async loaded={deliveries} what="deliveries">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            <EmptyState title="No deliveries yet" path={`/v1/webhooks/${endpoint.id}/deliveries`}>
              <p>A delivery appears here when the project records an event this endpoint receives. Its log, from the API:</p>
            </EmptyState>
          ) : (
            <>
              <table class="listing deliveries">
                <caption>Newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Status</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Created</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((delivery) => (
                    <tr key={delivery.id}>
                      <th scope="row">
                        <code>{delivery.event_type}</code>
                        <EventSubject eventId={delivery.event_id} />
                        {delivery.redelivery_of && <div class="muted">sent again from {delivery.redelivery_of}</div>}
                      </th>
                      <td>
                        <span class={`status status-${delivery.status}`}>{delivery.status}</span>
                        {delivery.completed_at !== null && <div class="muted">{formatTime(delivery.completed_at)}</div>}
                      </td>
                      <td>
                        <Attempts delivery={delivery} />
                      </td>
                      <td>{formatTime(delivery.created_at)}</td>
                      <td>
                        <button
                          type="button"
                          class="plain"
                          disabled={endpoint.status === 'disabled'}
                          title={endpoint.status === 'disabled' ? 'Enable the endpoint to send again' : undefined}
                          aria-label={`Redeliver ${delivery.event_id}`}
                          onClick={() => void redeliver(delivery)}
                        >
                          Redeliver
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} what="deliveries" />
            </>
          )
        }
      </Async>
    </section>
  );
}

function Attempts({ delivery }: { delivery: Delivery }) {
  if (delivery.attempts.length === 0) return <span class="muted">none yet</span>;
  return (
    <ol class="attempts">
      {delivery.attempts.map((attempt) => (
        <li key={attempt.attempt}>
          <span class={attempt.error ? 'error' : 'ok'}>
            {attempt.error ? '✗ failed' : '✓ delivered'}: {describeAnswer(attempt)}
          </span>{' '}
          <span class="muted">
            {formatTime(attempt.created_at)} · {formatDuration(attempt.duration_ms)}
          </span>
        </li>
      ))}
    </ol>
  );
}

/** The endpoint's answer, and why the attempt failed when the status alone does not say. */
function describeAnswer({ response_status, error }: Delivery['attempts'][number]): string {
  const status = response_status === null ? 'no answer' : `HTTP ${response_status}`;
  return error && error !== status ? `${status} (${error})` : status;
}

/** The event's id, and on request the object it announces (an event is thin: it only names its subject). */
function EventSubject({ eventId }: { eventId: string }) {
  const [subject, setSubject] = useState<Schemas['Event']['data'] | Error>();
  async function open(event: Event) {
    if (!(event.currentTarget as HTMLDetailsElement).open || subject) return;
    try {
      setSubject(unwrap(await api.GET('/v1/events/{id}', { params: { path: { id: eventId } } })).data);
    } catch (failure) {
      setSubject(failure as Error);
    }
  }
  return (
    <details class="event" onToggle={open}>
      <summary>
        <code class="id">{eventId}</code>
      </summary>
      {subject instanceof Error ? (
        <span class="error">{subject.message}</span>
      ) : subject ? (
        <span>
          About {subject.object} <IdLink id={subject.id} />
        </span>
      ) : (
        <span class="muted">Reading the event…</span>
      )}
    </details>
  );
}
