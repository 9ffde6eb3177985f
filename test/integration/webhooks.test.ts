import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { WorkflowNotFoundError } from '@temporalio/client';
import { newTenant, sharedApi, TEST_WEBHOOK_SETTINGS, type Tenant, type TestApi } from '../support/api.js';
import { eventually } from '../support/eventually.js';
import type { ApiClient, ApiResponse } from '../support/client.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';
import type { components } from '../../api/generated/openapi.js';
import { freePort } from '../../cli/embedded.js';
import { createDb } from '../../records/db.js';
import { testLog } from '../support/services.js';
import { REDELIVERIES_PER_HOUR } from '../../api/routes/webhooks/deliveries.js';
import { deliveryWorkflowId } from '../../workflows/webhooks/client.js';
import { ATTEMPTS_AT_ONCE_PER_PROJECT } from '../../workflows/webhooks/dispatcher.js';
import { RETRY_ATTEMPTS_PER_PROJECT, WEBHOOK_ATTEMPTS_AT_ONCE } from '../../workflows/webhooks/activities.js';

type Endpoint = components['schemas']['WebhookEndpoint'];
/** As created or rotated: with its secret. */
type EndpointWithSecret = components['schemas']['WebhookEndpointWithSecret'] & { secret: string };
type Delivery = components['schemas']['WebhookDelivery'];
type EventObject = components['schemas']['Event'];

const DELIVERY_TIMEOUT_MS = 30_000;

function assertError(response: ApiResponse, status: number, code?: string): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
  if (code) assert.equal(response.body.error.code, code, JSON.stringify(response.body));
}

/** Verifies a received delivery with the standardwebhooks package and answers the event it carries. */
function verified(secret: string, request: ReceivedWebhook): EventObject {
  const headers = {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(request.body, headers) as EventObject;
}

describe('events and webhooks', () => {
  let api: TestApi;
  let tenant: Tenant;
  let receiver: WebhookReceiver;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    tenant = await newTenant(api, 'webhooks');
    receiver = await startWebhookReceiver();
  });

  after(async () => {
    await receiver?.close();
  });

  async function register(
    client: ApiClient,
    path: string,
    eventTypes: string[] = ['file.deleted'],
    extra: Record<string, unknown> = {},
  ): Promise<EndpointWithSecret> {
    const created = await client.post<EndpointWithSecret>('/v1/webhooks', { url: receiver.url + path, event_types: eventTypes, ...extra });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body;
  }

  /** A file uploaded and deleted at once: one `file.deleted` event. Answers the file's id. */
  async function deleteAFile(client: ApiClient = tenant.admin): Promise<string> {
    const upload = await client.upload({
      file: { data: Buffer.from('short-lived'), filename: 'gone.txt', type: 'text/plain' },
      purpose: 'attachment',
    });
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    const deleted = await client.delete(`/v1/files/${upload.body.id}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    return upload.body.id;
  }

  async function deliveriesOf(endpointId: string, client: ApiClient = tenant.admin): Promise<Delivery[]> {
    const listed = await client.get<{ data: Delivery[] }>(`/v1/webhooks/${endpointId}/deliveries?limit=100`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    return listed.body.data;
  }

  async function deliveryWhere(endpointId: string, check: (d: Delivery) => boolean, message: string): Promise<Delivery> {
    return eventually(
      async () => {
        const found = (await deliveriesOf(endpointId)).find(check);
        assert.ok(found, message);
        return found;
      },
      { timeoutMs: DELIVERY_TIMEOUT_MS, intervalMs: 100, message },
    );
  }

  async function endpointOf(id: string): Promise<Endpoint> {
    const got = await tenant.admin.get<Endpoint>(`/v1/webhooks/${id}`);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    return got.body;
  }

  describe('endpoints', () => {
    it('shows the whsec_ signing secret once: not on GET, in the list, or on an idempotent replay', async () => {
      const created = await tenant.admin.post<EndpointWithSecret>(
        '/v1/webhooks',
        { url: `${receiver.url}/once`, event_types: ['file.processed', 'run.completed'], description: 'ops', metadata: { team: 'ops' } },
        { 'idempotency-key': 'register-once' },
      );
      assert.equal(created.status, 201);
      assert.match(created.body.id, /^whk_/);
      assert.match(created.body.secret, /^whsec_[A-Za-z0-9+/]+={0,2}$/);
      assert.equal(Buffer.from(created.body.secret.slice('whsec_'.length), 'base64').length, 32);
      assert.equal(created.body.status, 'enabled');
      assert.deepEqual(created.body.event_types, ['file.processed', 'run.completed']);
      assert.deepEqual(created.body.metadata, { team: 'ops' });

      const got = await tenant.admin.get(`/v1/webhooks/${created.body.id}`);
      assert.equal(got.status, 200);
      assert.equal('secret' in got.body, false);
      const listed = await tenant.admin.get<{ data: Endpoint[] }>('/v1/webhooks?limit=100');
      const inList = listed.body.data.find((e) => e.id === created.body.id);
      assert.ok(inList);
      assert.equal('secret' in inList, false);
      const replay = await tenant.admin.post(
        '/v1/webhooks',
        { url: `${receiver.url}/once`, event_types: ['file.processed', 'run.completed'], description: 'ops', metadata: { team: 'ops' } },
        { 'idempotency-key': 'register-once' },
      );
      assert.equal(replay.status, 201);
      assert.equal(replay.body.id, created.body.id);
      assert.equal('secret' in replay.body, false);
      assert.ok(!JSON.stringify(replay.body).includes(created.body.secret));
    });

    it('answers 400 for an unknown event type, a URL that is not http(s), and a URL with credentials', async () => {
      assertError(await tenant.admin.post('/v1/webhooks', { url: `${receiver.url}/x`, event_types: ['file.exploded'] }), 400);
      assertError(await tenant.admin.post('/v1/webhooks', { url: 'ftp://files.example.com/in', event_types: ['*'] }), 400);
      assertError(await tenant.admin.post('/v1/webhooks', { url: `${receiver.url}/x`, event_types: [] }), 400);
      assertError(await tenant.admin.post('/v1/webhooks', { url: `https://user:pw@hooks.example.com/x`, event_types: ['*'] }), 400);
      assertError(
        await tenant.admin.post('/v1/webhooks', { url: `https://hooks.example.com/${'a'.repeat(2100)}`, event_types: ['*'] }),
        400,
      );
    });

    it('takes a host name in its internationalized ASCII form or with inner double hyphens, and answers 400 naming a label that is not punycode', async () => {
      for (const url of ['https://xn--mnchen-3ya.de/hooks', 'https://deploy-preview-42--site.netlify.app/hooks']) {
        const created = await tenant.admin.post<EndpointWithSecret>('/v1/webhooks', { url, event_types: ['file.deleted'] });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        assert.equal(created.body.url, url);
        assert.equal((await tenant.admin.delete(`/v1/webhooks/${created.body.id}`)).status, 200);
      }
      const listed = async () => (await tenant.admin.get<{ data: unknown[] }>('/v1/webhooks?limit=100')).body.data.length;
      const before = await listed();
      const refused = await tenant.admin.post('/v1/webhooks', { url: 'https://hooks.xn--a.example/in', event_types: ['*'] });
      assertError(refused, 400, 'invalid_url');
      assert.equal(refused.body.error.message, 'hooks.xn--a.example is not a host name: its label xn--a is not valid punycode.');
      assert.equal(refused.body.error.param, 'url');
      assert.equal(await listed(), before);
      const endpoint = await register(tenant.admin, '/punycode');
      assertError(await tenant.admin.patch(`/v1/webhooks/${endpoint.id}`, { url: 'https://xn--0.example/in' }), 400, 'invalid_url');
      assert.equal((await tenant.admin.get<EndpointWithSecret>(`/v1/webhooks/${endpoint.id}`)).body.url, endpoint.url);
      assert.equal((await tenant.admin.delete(`/v1/webhooks/${endpoint.id}`)).status, 200);
    });

    it('changes the URL, types and description; disabling records webhook_endpoint.disabled; enabling starts the count afresh', async () => {
      const endpoint = await register(tenant.admin, '/patch');
      const changed = await tenant.admin.request<Endpoint>('PATCH', `/v1/webhooks/${endpoint.id}`, {
        json: { url: `${receiver.url}/patched`, event_types: ['*'], description: 'everything' },
      });
      assert.equal(changed.status, 200, JSON.stringify(changed.body));
      assert.equal(changed.body.url, `${receiver.url}/patched`);
      assert.deepEqual(changed.body.event_types, ['*']);
      assert.equal(changed.body.description, 'everything');

      const disabled = await tenant.admin.request<Endpoint>('PATCH', `/v1/webhooks/${endpoint.id}`, { json: { status: 'disabled' } });
      assert.equal(disabled.body.status, 'disabled');
      assert.equal(disabled.body.disabled_reason, 'requested');
      const events = await tenant.admin.get<{ data: EventObject[] }>(`/v1/events?type=webhook_endpoint.disabled&object_id=${endpoint.id}`);
      assert.equal(events.body.data.length, 1);
      assert.deepEqual(events.body.data[0]!.data, { id: endpoint.id, object: 'webhook_endpoint' });

      const enabled = await tenant.admin.request<Endpoint>('PATCH', `/v1/webhooks/${endpoint.id}`, { json: { status: 'enabled' } });
      assert.equal(enabled.body.status, 'enabled');
      assert.equal(enabled.body.disabled_reason, null);
      assert.equal(enabled.body.consecutive_failures, 0);
      assertError(await tenant.admin.request('PATCH', `/v1/webhooks/${endpoint.id}`, { json: {} }), 400);
    });

    it('refuses a 51st endpoint in a project with 409 too_many_webhook_endpoints', async () => {
      const crowded = await newTenant(api, 'webhooks-crowded');
      for (let i = 0; i < 50; i++) await register(crowded.admin, `/crowd/${i}`, ['webhook_endpoint.disabled']);
      assertError(
        await crowded.admin.post('/v1/webhooks', { url: `${receiver.url}/crowd/50`, event_types: ['*'] }),
        409,
        'too_many_webhook_endpoints',
      );
      const listed = await crowded.admin.get<{ data: Endpoint[]; has_more: boolean }>('/v1/webhooks?limit=100');
      assert.equal(listed.body.data.length, 50);
    });

    it('deletes an endpoint: 404 afterwards, and its deliveries are gone with it', async () => {
      const endpoint = await register(tenant.admin, '/deleted');
      const deleted = await tenant.admin.delete(`/v1/webhooks/${endpoint.id}`);
      assert.equal(deleted.status, 200);
      assert.deepEqual(deleted.body, { id: endpoint.id, object: 'webhook_endpoint', deleted: true });
      assertError(await tenant.admin.get(`/v1/webhooks/${endpoint.id}`), 404);
      assertError(await tenant.admin.get(`/v1/webhooks/${endpoint.id}/deliveries`), 404);
      assertError(await tenant.admin.delete(`/v1/webhooks/${endpoint.id}`), 404);
    });

    it('deletes an endpoint while a delivery of it is being failed, without either deadlocking', async () => {
      const endpoint = await register(tenant.admin, '/deleted-while-failing');
      await deleteAFile();
      const [delivery] = await eventually(async () => {
        const found = await deliveriesOf(endpoint.id);
        assert.equal(found.length, 1);
        assert.equal(found[0]!.status, 'succeeded');
        return found;
      });
      const locker = createDb(api.services.db.connectionString, { max: 1, log: testLog });
      const failing = await locker.connect();
      try {
        // As failDelivery ends a delivery: its row first, then its endpoint's count of failures.
        await failing.query('BEGIN');
        await failing.query(`UPDATE webhook_deliveries SET status = status WHERE id = $1`, [delivery!.id]);
        const deleting = tenant.admin.delete(`/v1/webhooks/${endpoint.id}`);
        await eventually(async () => {
          const { rows } = await api.services.db.query(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%webhook_%' AND pid <> $1`,
            [(await failing.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid],
          );
          assert.ok(rows.length > 0, 'the deletion waits for the delivery');
        });
        await failing.query(`UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1 WHERE id = $1`, [endpoint.id]);
        await failing.query('COMMIT');
        const deleted = await deleting;
        assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
        assertError(await tenant.admin.get(`/v1/webhooks/${endpoint.id}`), 404);
      } finally {
        await failing.query('ROLLBACK').catch(() => undefined);
        failing.release();
        await locker.end();
      }
    });

    it('needs webhooks:read to read, webhooks:write to change, events:read for events; admin keys do everything', async () => {
      const reader = await tenant.keyWith('webhooks:read');
      const writer = await tenant.keyWith('webhooks:write');
      const files = await tenant.keyWith('files:read');
      const endpoint = await register(writer, '/scoped');
      assert.equal((await reader.get(`/v1/webhooks/${endpoint.id}`)).status, 200);
      assert.equal((await reader.get(`/v1/webhooks/${endpoint.id}/deliveries`)).status, 200);
      assertError(await reader.post('/v1/webhooks', { url: `${receiver.url}/no`, event_types: ['*'] }), 403);
      assertError(await reader.post(`/v1/webhooks/${endpoint.id}/rotate_secret`, undefined), 403);
      assertError(await reader.delete(`/v1/webhooks/${endpoint.id}`), 403);
      assertError(await files.get('/v1/webhooks'), 403);
      assertError(await files.get('/v1/events'), 403);
      assert.equal((await (await tenant.keyWith('events:read')).get('/v1/events')).status, 200);
      assert.equal((await tenant.admin.get('/v1/events')).status, 200);
    });
  });

  describe('delivery', () => {
    it('POSTs a file.deleted event with Standard Webhooks headers that the standardwebhooks package verifies', async () => {
      const endpoint = await register(tenant.admin, '/signed');
      const fileId = await deleteAFile();
      const [request] = await eventually(
        () => {
          const got = receiver.to('/signed');
          assert.equal(got.length, 1);
          return got;
        },
        { timeoutMs: DELIVERY_TIMEOUT_MS, message: 'the event was not delivered' },
      );
      const event = verified(endpoint.secret, request!);
      assert.equal(event.type, 'file.deleted');
      assert.equal(event.object, 'event');
      assert.deepEqual(event.data, { id: fileId, object: 'file' });
      assert.equal(request!.headers['webhook-id'], event.id);
      assert.match(String(request!.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+={0,2}$/);
      assert.ok(Math.abs(Number(request!.headers['webhook-timestamp']) - Date.now() / 1000) < 60);
      assert.equal(request!.headers['content-type'], 'application/json');
      assert.match(String(request!.headers['user-agent']), /^Agentplane-Webhooks\//);
      assert.throws(() =>
        new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(request!.body, request!.headers as Record<string, string>),
      );

      // The body is the event as the API shows it.
      const shown = await tenant.admin.get<EventObject>(`/v1/events/${event.id}`);
      assert.equal(shown.status, 200);
      assert.deepEqual(JSON.parse(request!.body), shown.body);
      const delivery = await deliveryWhere(endpoint.id, (d) => d.status === 'succeeded', 'no succeeded delivery');
      assert.equal(delivery.event_id, event.id);
      assert.equal(delivery.event_type, 'file.deleted');
      assert.equal(delivery.attempts.length, 1);
      assert.equal(delivery.attempts[0]!.response_status, 204);
      assert.equal(delivery.attempts[0]!.error, null);
    });

    it('retries a receiver that fails twice, then recovers: the same webhook-id each time, every attempt logged', async () => {
      receiver.answer('/flaky', [500, 503]);
      const endpoint = await register(tenant.admin, '/flaky');
      await deleteAFile();
      const delivery = await deliveryWhere(
        endpoint.id,
        (d) => d.status === 'succeeded',
        'the delivery did not succeed after the receiver recovered',
      );
      const requests = receiver.to('/flaky');
      assert.deepEqual(
        requests.map((r) => r.answered),
        [500, 503, 204],
      );
      assert.equal(new Set(requests.map((r) => r.headers['webhook-id'])).size, 1);
      assert.equal(requests[0]!.headers['webhook-id'], delivery.event_id);
      for (const request of requests) verified(endpoint.secret, request);
      assert.deepEqual(
        delivery.attempts.map((a) => [a.attempt, a.response_status, a.error]),
        [
          [1, 500, 'HTTP 500'],
          [2, 503, 'HTTP 503'],
          [3, 204, null],
        ],
      );
      // Backoff: each wait is at least the one before.
      const times = delivery.attempts.map((a) => a.created_at);
      assert.ok(times[2]! >= times[1]! && times[1]! >= times[0]!);
      assert.equal((await endpointOf(endpoint.id)).consecutive_failures, 0);
      // Its retries are dispatched fairly among projects: the project is their fairness key.
      const retries = await api.services.temporal.workflow.getHandle(deliveryWorkflowId(delivery.id)).describe();
      assert.equal(retries.priority?.fairnessKey, tenant.projectId);
    });

    it('keeps trying a receiver that is down (connection refused) until it comes up', async () => {
      const port = await freePort();
      const endpoint = await tenant.admin.post<EndpointWithSecret>('/v1/webhooks', {
        url: `http://127.0.0.1:${port}/later`,
        event_types: ['file.deleted'],
      });
      assert.equal(endpoint.status, 201);
      await deleteAFile();
      const refused = await deliveryWhere(endpoint.body.id, (d) => d.attempts.length > 0, 'no attempt was made');
      assert.match(refused.attempts[0]!.error!, /ECONNREFUSED/);
      assert.equal(refused.attempts[0]!.response_status, null);
      const late = await startWebhookReceiver(port);
      try {
        const delivered = await deliveryWhere(
          endpoint.body.id,
          (d) => d.status === 'succeeded',
          'the delivery did not succeed once the receiver was up',
        );
        assert.equal(late.to('/later').length, 1);
        assert.equal(verified(endpoint.body.secret, late.to('/later')[0]!).id, delivered.event_id);
      } finally {
        await late.close();
      }
    });

    it('ends an attempt whose endpoint is deleted while it waits for the receiver: it fails nothing and is not made again', async () => {
      const held = receiver.hold('/deleted-mid-attempt');
      const endpoint = await register(tenant.admin, '/deleted-mid-attempt');
      await deleteAFile();
      const delivery = await deliveryWhere(endpoint.id, () => true, 'no delivery was made');
      await eventually(() => assert.equal(held.waiting(), 1), {
        timeoutMs: DELIVERY_TIMEOUT_MS,
        message: 'the attempt did not reach the receiver',
      });
      assert.equal((await tenant.admin.delete(`/v1/webhooks/${endpoint.id}`)).status, 200);
      held.release();
      // An event recorded after the release, delivered to another endpoint: the dispatcher has gone on since.
      const later = await register(tenant.admin, '/after-the-deleted-one');
      await deleteAFile();
      await deliveryWhere(later.id, (d) => d.status === 'succeeded', 'the later delivery did not succeed');
      assert.equal(receiver.to('/deleted-mid-attempt').length, 1, 'the attempt was made again');
      // Its first attempt ended with the delivery gone: no workflow was started for retries.
      await assert.rejects(api.services.temporal.workflow.getHandle(deliveryWorkflowId(delivery.id)).describe(), WorkflowNotFoundError);
      assert.equal((await tenant.admin.get(`/v1/webhooks/${later.id}/deliveries`)).body.data.length, 1);
    });

    it('treats a redirect as a failed attempt and never follows it', async () => {
      receiver.answer('/moved', { always: 302 });
      receiver.redirect('/moved', `${receiver.url}/moved-to`);
      const endpoint = await register(tenant.admin, '/moved');
      await deleteAFile();
      const delivery = await deliveryWhere(endpoint.id, (d) => d.status === 'failed', 'the redirected delivery did not fail');
      assert.equal(delivery.attempts.length, TEST_WEBHOOK_SETTINGS.maxAttempts);
      for (const attempt of delivery.attempts) {
        assert.equal(attempt.response_status, 302);
        assert.match(attempt.error!, /redirects are not followed/);
      }
      assert.equal(receiver.to('/moved-to').length, 0, 'the redirect was followed');
      assert.equal((await endpointOf(endpoint.id)).consecutive_failures, 1);
    });

    it(`disables an endpoint after ${TEST_WEBHOOK_SETTINGS.disableAfter} deliveries in a row fail, with its event and an audit entry; redelivery then sends the same webhook-id`, async () => {
      receiver.answer('/down', { always: 500 });
      const endpoint = await register(tenant.admin, '/down');
      for (let i = 0; i < TEST_WEBHOOK_SETTINGS.disableAfter; i++) await deleteAFile();
      const disabled = await eventually(
        async () => {
          const current = await endpointOf(endpoint.id);
          assert.equal(current.status, 'disabled');
          return current;
        },
        { timeoutMs: DELIVERY_TIMEOUT_MS, message: 'the failing endpoint was not disabled' },
      );
      assert.equal(disabled.disabled_reason, 'failing');
      assert.equal(disabled.consecutive_failures, TEST_WEBHOOK_SETTINGS.disableAfter);
      const deliveries = await deliveriesOf(endpoint.id);
      assert.equal(deliveries.length, TEST_WEBHOOK_SETTINGS.disableAfter);
      for (const d of deliveries) assert.equal(d.attempts.length, TEST_WEBHOOK_SETTINGS.maxAttempts);

      const events = await tenant.admin.get<{ data: EventObject[] }>(`/v1/events?type=webhook_endpoint.disabled&object_id=${endpoint.id}`);
      assert.equal(events.body.data.length, 1);
      const audit = await tenant.admin.get<{ data: components['schemas']['AuditLogEntry'][] }>(
        `/v1/audit-logs?target_id=${endpoint.id}&action=webhook_endpoint.disable`,
      );
      assert.equal(audit.body.data.length, 1);
      assert.deepEqual(audit.body.data[0]!.actor, { api_key_id: null });
      assert.deepEqual(audit.body.data[0]!.target, { type: 'webhook_endpoint', id: endpoint.id });

      // Disabled: no new deliveries, and none redelivered.
      const before = receiver.to('/down').length;
      const later = await deleteAFile();
      await eventually(
        async () => {
          const { rows } = await api.services.db.query(
            `SELECT 1 FROM events WHERE type = 'file.deleted' AND data->>'id' = $1 AND delivered_at IS NOT NULL`,
            [later],
          );
          assert.equal(rows.length, 1);
        },
        { timeoutMs: DELIVERY_TIMEOUT_MS, message: 'the event was not dispatched' },
      );
      assert.equal((await deliveriesOf(endpoint.id)).length, TEST_WEBHOOK_SETTINGS.disableAfter);
      const failed = deliveries[0]!;
      assertError(
        await tenant.admin.post(`/v1/webhooks/${endpoint.id}/deliveries/${failed.id}/redeliver`, undefined),
        409,
        'endpoint_disabled',
      );

      // The receiver is back; the endpoint is enabled again and a failed delivery sent once more.
      receiver.answer('/down', { always: 200 });
      const enabled = await tenant.admin.request<Endpoint>('PATCH', `/v1/webhooks/${endpoint.id}`, { json: { status: 'enabled' } });
      assert.equal(enabled.body.consecutive_failures, 0);
      const redelivery = await tenant.admin.post<Delivery>(`/v1/webhooks/${endpoint.id}/deliveries/${failed.id}/redeliver`, undefined);
      assert.equal(redelivery.status, 202, JSON.stringify(redelivery.body));
      assert.equal(redelivery.body.status, 'pending');
      assert.equal(redelivery.body.redelivery_of, failed.id);
      assert.equal(redelivery.body.event_id, failed.event_id);
      const done = await deliveryWhere(
        endpoint.id,
        (d) => d.id === redelivery.body.id && d.status === 'succeeded',
        'the redelivery did not succeed',
      );
      assert.equal(done.attempts.length, 1);
      const resent = receiver.to('/down').slice(before);
      assert.equal(resent.length, 1);
      assert.equal(resent[0]!.headers['webhook-id'], failed.event_id);
      assertError(await tenant.admin.post(`/v1/webhooks/${endpoint.id}/deliveries/whd_nope/redeliver`, undefined), 404);
    });

    it(`redelivers one event to one endpoint ${REDELIVERIES_PER_HOUR} times an hour, then answers 429 redeliveries_exceeded with Retry-After and sends nothing more`, async () => {
      const endpoint = await register(tenant.admin, '/echoed');
      await deleteAFile();
      const first = await deliveryWhere(endpoint.id, (d) => d.status === 'succeeded', 'the delivery did not succeed');
      for (let i = 0; i < REDELIVERIES_PER_HOUR; i++) {
        // Redelivering a redelivery counts against the same event.
        const of = i % 2 === 0 ? first.id : (await deliveriesOf(endpoint.id))[0]!.id;
        assert.equal((await tenant.admin.post(`/v1/webhooks/${endpoint.id}/deliveries/${of}/redeliver`, undefined)).status, 202);
      }
      const refused = await tenant.admin.post(`/v1/webhooks/${endpoint.id}/deliveries/${first.id}/redeliver`, undefined);
      assertError(refused, 429, 'redeliveries_exceeded');
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(retryAfter > 3_000 && retryAfter <= 3_600, `Retry-After: ${retryAfter}`);
      assert.equal((await deliveriesOf(endpoint.id)).length, 1 + REDELIVERIES_PER_HOUR);
      // Another event to the same endpoint has an allowance of its own.
      await deleteAFile();
      const second = await deliveryWhere(
        endpoint.id,
        (d) => d.event_id !== first.event_id && d.redelivery_of === null,
        'the second event was not delivered',
      );
      assert.equal((await tenant.admin.post(`/v1/webhooks/${endpoint.id}/deliveries/${second.id}/redeliver`, undefined)).status, 202);
    });

    it('rotates the secret: shown once, and during the grace period a delivery carries signatures by both', async () => {
      const endpoint = await register(tenant.admin, '/rotated');
      const rotated = await tenant.admin.post<EndpointWithSecret>(`/v1/webhooks/${endpoint.id}/rotate_secret`, undefined);
      assert.equal(rotated.status, 200);
      assert.match(rotated.body.secret, /^whsec_/);
      assert.notEqual(rotated.body.secret, endpoint.secret);
      assert.equal('secret' in (await tenant.admin.get(`/v1/webhooks/${endpoint.id}`)).body, false);
      await deleteAFile();
      const [request] = await eventually(
        () => {
          const got = receiver.to('/rotated');
          assert.equal(got.length, 1);
          return got;
        },
        { timeoutMs: DELIVERY_TIMEOUT_MS, message: 'the event was not delivered' },
      );
      assert.equal(String(request!.headers['webhook-signature']).split(' ').length, 2);
      assert.equal(verified(rotated.body.secret, request!).type, 'file.deleted');
      assert.equal(verified(endpoint.secret, request!).type, 'file.deleted');
    });

    it('sends an endpoint only the types it chose, and `*` every type', async () => {
      const processedOnly = await register(tenant.admin, '/processed-only', ['file.processed']);
      const everything = await register(tenant.admin, '/everything', ['*']);
      const fileId = await deleteAFile();
      await eventually(() => assert.ok(receiver.to('/everything').some((r) => JSON.parse(r.body).data.id === fileId)), {
        timeoutMs: DELIVERY_TIMEOUT_MS,
        message: 'the * endpoint did not get the event',
      });
      assert.equal((await deliveriesOf(processedOnly.id)).length, 0);
      assert.ok((await deliveriesOf(everything.id)).length >= 1);
    });
  });

  describe('tenants', () => {
    it("holds no more than a project's share of first attempts on a receiver that does not answer, and another project's deliveries arrive meanwhile", async () => {
      const slow = await newTenant(api, 'webhooks-slow');
      const held = receiver.hold('/never-answers');
      const stuck = await register(slow.admin, '/never-answers');
      const events = ATTEMPTS_AT_ONCE_PER_PROJECT + 4;
      for (let i = 0; i < events; i++) await deleteAFile(slow.admin);
      try {
        await eventually(() => assert.equal(held.waiting(), ATTEMPTS_AT_ONCE_PER_PROJECT), {
          timeoutMs: DELIVERY_TIMEOUT_MS,
          message: 'the first attempts did not reach the receiver',
        });
        const endpoint = await register(tenant.admin, '/answers-meanwhile');
        await deleteAFile();
        await deliveryWhere(endpoint.id, (d) => d.status === 'succeeded', 'the other project’s delivery did not arrive');
        assert.equal(held.waiting(), ATTEMPTS_AT_ONCE_PER_PROJECT, 'the held project took more attempts than its share');
      } finally {
        held.release();
      }
      await eventually(
        async () => assert.equal((await deliveriesOf(stuck.id, slow.admin)).filter((d) => d.status === 'succeeded').length, events),
        {
          timeoutMs: DELIVERY_TIMEOUT_MS,
          message: 'the held project’s deliveries did not all arrive once its receiver answered',
        },
      );
    });

    it("holds no more than a project's share of retry attempts on receivers that do not answer, and another project's retries are made meanwhile", async () => {
      // More deliveries in retry than a worker makes attempts at once: each failed its first attempt, and each retry waits.
      const slow = await newTenant(api, 'webhooks-slow-retries');
      const held = receiver.hold('/retries-wait', { firstAnswered: 500 });
      const endpoints = Math.ceil((WEBHOOK_ATTEMPTS_AT_ONCE + 6) / 2);
      for (let i = 0; i < endpoints; i++) await register(slow.admin, `/retries-wait?endpoint=${i}`);
      const deliveries = endpoints * 2;
      for (let i = 0; i < 2; i++) await deleteAFile(slow.admin);
      const attemptsOf = async () => {
        const { rows } = await api.services.db.query<{ status: string; attempts: [number, number | null][] }>(
          `SELECT d.status, coalesce(json_agg(json_build_array(a.attempt, a.response_status) ORDER BY a.attempt)
                    FILTER (WHERE a.attempt IS NOT NULL), '[]') AS attempts
             FROM webhook_deliveries d LEFT JOIN webhook_delivery_attempts a ON a.delivery_id = d.id
            WHERE d.project_id = $1 GROUP BY d.id`,
          [slow.projectId],
        );
        return rows;
      };
      try {
        await eventually(
          async () => {
            assert.equal((await attemptsOf()).filter((d) => d.attempts.length === 1).length, deliveries);
            assert.ok(held.waiting() >= RETRY_ATTEMPTS_PER_PROJECT, `${held.waiting()} retries waiting`);
          },
          { timeoutMs: DELIVERY_TIMEOUT_MS, message: 'the retries did not reach the receiver' },
        );
        receiver.answer('/fails-once', [500]);
        const endpoint = await register(tenant.admin, '/fails-once');
        await deleteAFile();
        const delivered = await deliveryWhere(endpoint.id, (d) => d.status === 'succeeded', 'the other project’s retry was not made');
        assert.deepEqual(
          delivered.attempts.map((a) => [a.attempt, a.response_status]),
          [
            [1, 500],
            [2, 204],
          ],
        );
        // Made while every one of the held project's retries still waited on its receiver: none had ended.
        assert.ok(
          (await attemptsOf()).every((d) => d.attempts.length === 1),
          'one of the held project’s retries had to end before the other project’s retry was made',
        );
        assert.equal(held.waiting(), RETRY_ATTEMPTS_PER_PROJECT, 'the held project took more retry attempts than its share');
      } finally {
        held.release();
      }
      // The attempts refused meanwhile were made once there was room, numbered as if nothing had come between.
      await eventually(
        async () => {
          const now = await attemptsOf();
          assert.equal(now.length, deliveries);
          for (const delivery of now) {
            assert.equal(delivery.status, 'succeeded');
            assert.deepEqual(delivery.attempts, [
              [1, 500],
              [2, 204],
            ]);
          }
        },
        { timeoutMs: DELIVERY_TIMEOUT_MS, message: 'the held project’s deliveries did not all arrive once its receivers answered' },
      );
    });

    it("keeps another project from seeing or touching an endpoint, its deliveries or its project's events", async () => {
      const other = await newTenant(api, 'webhooks-other');
      const endpoint = await register(tenant.admin, '/mine', ['*']);
      const fileId = await deleteAFile();
      const delivery = await deliveryWhere(endpoint.id, (d) => d.status === 'succeeded', 'no delivery');
      for (const response of [
        await other.admin.get(`/v1/webhooks/${endpoint.id}`),
        await other.admin.request('PATCH', `/v1/webhooks/${endpoint.id}`, { json: { status: 'disabled' } }),
        await other.admin.post(`/v1/webhooks/${endpoint.id}/rotate_secret`, undefined),
        await other.admin.get(`/v1/webhooks/${endpoint.id}/deliveries`),
        await other.admin.post(`/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`, undefined),
        await other.admin.delete(`/v1/webhooks/${endpoint.id}`),
        await other.admin.get(`/v1/events/${delivery.event_id}`),
      ]) {
        assertError(response, 404);
      }
      assert.equal((await other.admin.get<{ data: Endpoint[] }>('/v1/webhooks')).body.data.length, 0);
      assert.equal((await other.admin.get<{ data: EventObject[] }>(`/v1/events?object_id=${fileId}`)).body.data.length, 0);
      assert.equal((await endpointOf(endpoint.id)).status, 'enabled');

      // The other project's events never reach this project's endpoint.
      const theirs = await deleteAFile(other.admin);
      await eventually(
        async () => {
          const { rows } = await api.services.db.query(
            `SELECT 1 FROM events WHERE type = 'file.deleted' AND data->>'id' = $1 AND delivered_at IS NOT NULL`,
            [theirs],
          );
          assert.equal(rows.length, 1);
        },
        { timeoutMs: DELIVERY_TIMEOUT_MS, message: 'the event was not dispatched' },
      );
      assert.ok(!receiver.to('/mine').some((r) => JSON.parse(r.body).data.id === theirs));
    });
  });

  describe('GET /v1/events', () => {
    it('filters by type (repeated or comma-separated), time and object, and pages by cursor', async () => {
      const events = await newTenant(api, 'events');
      const first = await deleteAFile(events.admin);
      const second = await deleteAFile(events.admin);
      const upload = await events.admin.upload({
        file: { data: Buffer.from('kept'), filename: 'kept.txt', type: 'text/plain' },
        purpose: 'attachment',
      });
      const processed = await events.admin.settledFile<{ status: string }>(upload.body.id);
      assert.equal(processed.status, 'processed');

      // A file deleted straight after its upload may have been processed first: its own events are counted by type.
      const all = await events.admin.get<{ data: EventObject[]; has_more: boolean }>('/v1/events?limit=100');
      assert.equal(all.status, 200);
      assert.ok(all.body.data.some((e) => e.type === 'file.processed' && e.data.id === upload.body.id));
      const deleted = await events.admin.get<{ data: EventObject[] }>('/v1/events?type=file.deleted');
      assert.deepEqual(
        deleted.body.data.map((e) => e.data.id),
        [second, first],
        'newest first',
      );
      const processedCount = all.body.data.filter((e) => e.type === 'file.processed').length;
      const both = await events.admin.get<{ data: EventObject[] }>('/v1/events?type=file.deleted&type=file.processed&limit=100');
      assert.equal(both.body.data.length, 2 + processedCount);
      const comma = await events.admin.get<{ data: EventObject[] }>('/v1/events?type=file.deleted,file.processed&limit=100');
      assert.deepEqual(
        comma.body.data.map((e) => e.id),
        both.body.data.map((e) => e.id),
      );
      for (const bad of ['file.exploded', 'file.deleted,file.exploded', '0']) {
        const refused = await events.admin.get(`/v1/events?type=${bad}`);
        assertError(refused, 400);
        assert.match(refused.body.error.param, /^type(\.\d+)?$/, 'the parameter, and which of its values');
      }
      assertError(await events.admin.get('/v1/events?type=file.deleted&type=nope'), 400);

      const byObject = await events.admin.get<{ data: EventObject[] }>(`/v1/events?object_id=${first}&type=file.deleted`);
      assert.deepEqual(
        byObject.body.data.map((e) => [e.type, e.data.id]),
        [['file.deleted', first]],
      );

      const oldest = Math.min(...all.body.data.map((e) => e.created_at));
      assert.equal((await events.admin.get<{ data: EventObject[] }>(`/v1/events?created_before=${oldest}`)).body.data.length, 0);
      assert.equal(
        (await events.admin.get<{ data: EventObject[] }>(`/v1/events?created_after=${oldest - 1}&limit=100`)).body.data.length,
        all.body.data.length,
      );
      assert.equal(
        (await events.admin.get<{ data: EventObject[] }>(`/v1/events?created_after=${Math.floor(Date.now() / 1000) + 5}`)).body.data.length,
        0,
      );

      const page1 = await events.admin.get<{ data: EventObject[]; has_more: boolean; last_id: string }>(
        '/v1/events?type=file.deleted&limit=1&order=asc',
      );
      assert.deepEqual(
        page1.body.data.map((e) => e.data.id),
        [first],
      );
      assert.equal(page1.body.has_more, true);
      const page2 = await events.admin.get<{ data: EventObject[]; has_more: boolean }>(
        `/v1/events?type=file.deleted&limit=1&order=asc&after=${page1.body.last_id}`,
      );
      assert.deepEqual(
        page2.body.data.map((e) => e.data.id),
        [second],
      );
      assert.equal(page2.body.has_more, false);
      assertError(await events.admin.get('/v1/events/evt_nothere'), 404);
    });
  });
});
