/**
 * Webhook targets on private, loopback and link-local addresses are refused when the platform does not
 * allow them: a literal address at registration, a name when the delivery connects (whatever it resolved
 * to at registration), and a redirect is never followed. The API here refuses private targets; deliveries
 * are attempted by the delivery activity itself with the same policy, so that no other worker sharing the
 * test database (which allows loopback receivers) can take them.
 */
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { hostname } from 'node:os';
import { MockActivityEnvironment as ActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { newTenant, startTestApi, TEST_WEBHOOK_SETTINGS, type Tenant, type TestApi } from '../support/api.js';
import type { ApiResponse } from '../support/client.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { newId } from '../../records/ids.js';
import { insertEndpoint } from '../../records/webhooks.js';
import { isPublicAddress } from '../../tools/network-guard.js';
import { createWebhookActivities } from '../../workflows/webhooks/activities.js';
import { postSigned } from '../../workflows/webhooks/send.js';

/** An activity context for the attempt numbered `attempt`; the SDK's report of a failed attempt is not printed. */
const attemptNumber = (attempt: number) => new ActivityEnvironment({ attempt }, { logger: new DefaultLogger('ERROR') });

function assertRefused(response: ApiResponse, what: string): void {
  assert.equal(response.status, 400, `${what}: ${JSON.stringify(response.body)}`);
  assert.equal(response.body.error.code, 'invalid_url', what);
  assert.equal(response.body.error.param, 'url', what);
}

describe('webhook targets that are not public', () => {
  let api: TestApi;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  const strict = createWebhookActivities;

  before(async function () {
    this.timeout(120_000);
    api = await startTestApi({ worker: false, webhooks: { allowPrivate: false } });
    tenant = await newTenant(api, 'webhook-ssrf');
    receiver = await startWebhookReceiver();
  });

  after(async () => {
    await receiver?.close();
    await api?.stop();
  });

  /** A delivery of a fresh event to an endpoint at `url`, recorded as already dispatched and started, so that only this test attempts it. */
  async function deliveryTo(url: string): Promise<string> {
    const db = api.services.db;
    const { record } = await insertEndpoint(db, { projectId: tenant.projectId, url, eventTypes: ['file.deleted'] });
    const eventId = newId('evt');
    await db.query(`INSERT INTO events (id, project_id, type, data, delivered_at) VALUES ($1, $2, 'file.deleted', $3, now())`, [
      eventId,
      tenant.projectId,
      { object: 'file', id: newId('file') },
    ]);
    const deliveryId = newId('whd');
    await db.query('INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, started_at) VALUES ($1, $2, $3, $4, now())', [
      deliveryId,
      tenant.projectId,
      record.id,
      eventId,
    ]);
    return deliveryId;
  }

  async function attemptsOf(deliveryId: string): Promise<{ response_status: number | null; error: string | null }[]> {
    const { rows } = await api.services.db.query<{ response_status: number | null; error: string | null }>(
      'SELECT response_status, error FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY attempt',
      [deliveryId],
    );
    return rows;
  }

  it('refuses at registration, and when changing the URL, a literal loopback, private, link-local or unspecified address and localhost names', async () => {
    const port = new URL(receiver.url).port;
    const targets = [
      `http://127.0.0.1:${port}/hook`,
      `http://[::1]:${port}/hook`,
      `http://localhost:${port}/hook`,
      `https://hooks.localhost/hook`,
      'http://169.254.169.254/latest/meta-data',
      'https://10.0.0.5/hook',
      'https://192.168.1.20/hook',
      'https://[fd00::1]/hook',
      'http://0.0.0.0/hook',
      'http://[::ffff:127.0.0.1]/hook',
    ];
    for (const url of targets) assertRefused(await tenant.admin.post('/v1/webhooks', { url, event_types: ['*'] }), url);
    const allowed = await tenant.admin.post('/v1/webhooks', { url: 'https://93.184.215.14/hook', event_types: ['*'] });
    assert.equal(allowed.status, 201, JSON.stringify(allowed.body));
    assertRefused(
      await tenant.admin.request('PATCH', `/v1/webhooks/${allowed.body.id}`, { json: { url: `http://127.0.0.1:${port}/hook` } }),
      'PATCH',
    );
    assert.equal((await tenant.admin.get(`/v1/webhooks?limit=100`)).body.data.length, 1, 'nothing refused was stored');
  });

  it('says in the document it serves that it refuses them, ruling out localhost names and literal non-public IPv4 hosts in the URL schema', async () => {
    const served = await fetch(`${api.url}/v1/openapi.json`).then(
      (response) => response.json() as Promise<{ components: { schemas: Record<string, any> } }>,
    );
    const webhookUrl = served.components.schemas.WebhookUrl;
    assert.match(
      webhookUrl.description,
      /This deployment refuses private, loopback, link-local and other non-public targets with 400 `invalid_url`/,
    );
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ ...served, $id: 'served' });
    const admits = ajv.compile({ $ref: 'served#/components/schemas/WebhookUrl' });
    for (const url of ['http://127.0.0.1:9000/hook', 'http://169.254.169.254/', 'http://hooks.localhost/']) {
      assert.equal(admits(url), false, url);
      assertRefused(await tenant.admin.post('/v1/webhooks', { url, event_types: ['file.deleted'] }), url);
    }
    assert.equal(admits('https://hooks.example.com/in'), true);
  });

  it('accepts a name at registration, and refuses the delivery when the name resolves to loopback at connect time', async () => {
    const name = hostname();
    const resolved = await lookup(name, { all: true });
    assert.ok(
      resolved.every((a) => !isPublicAddress(a.address)),
      `this machine's name ${name} should resolve to a non-public address: ${JSON.stringify(resolved)}`,
    );
    const url = `http://${name}:${new URL(receiver.url).port}/by-name`;
    const registered = await tenant.admin.post('/v1/webhooks', { url, event_types: ['*'] });
    assert.equal(registered.status, 201, 'a name is judged by what it resolves to when a delivery connects');

    const deliveryId = await deliveryTo(url);
    const activities = strict({ db: api.services.db, webhooks: { ...TEST_WEBHOOK_SETTINGS, allowPrivate: false } });
    await assert.rejects(attemptNumber(1).run(activities.attemptWebhookDelivery, deliveryId), /resolves to .*not a public address/);
    const [attempt] = await attemptsOf(deliveryId);
    assert.equal(attempt!.response_status, null);
    assert.match(attempt!.error!, new RegExp(`^refused: ${name} resolves to [^ ]+, which is not a public address`));
    assert.equal(receiver.to('/by-name').length, 0, 'the receiver was reached');

    // The same delivery where private targets are allowed reaches the receiver: the guard, not the network, refused it.
    const allowing = strict({ db: api.services.db, webhooks: { ...TEST_WEBHOOK_SETTINGS, allowPrivate: true } });
    await attemptNumber(2).run(allowing.attemptWebhookDelivery, deliveryId);
    assert.equal(receiver.to('/by-name').length, 1);
  });

  it('refuses `localhost` by its resolved address too, and a literal IPv6 loopback before connecting', async () => {
    const port = new URL(receiver.url).port;
    const activities = strict({ db: api.services.db, webhooks: { ...TEST_WEBHOOK_SETTINGS, allowPrivate: false } });
    const viaName = await deliveryTo(`http://localhost:${port}/localhost`);
    await assert.rejects(attemptNumber(1).run(activities.attemptWebhookDelivery, viaName));
    assert.match(
      (await attemptsOf(viaName))[0]!.error!,
      /^refused: localhost resolves to (127\.0\.0\.1|::1), which is not a public address/,
    );

    const literal = await deliveryTo(`http://[::1]:${port}/v6`);
    await assert.rejects(attemptNumber(1).run(activities.attemptWebhookDelivery, literal));
    assert.match((await attemptsOf(literal))[0]!.error!, /^refused: ::1 is not a public address/);
    assert.equal(receiver.to('/localhost').length + receiver.to('/v6').length, 0);
  });

  it('does not follow a redirect from a receiver to a private address: the attempt fails with the 3xx', async () => {
    receiver.answer('/bounce', { always: 307 });
    receiver.redirect('/bounce', 'http://169.254.169.254/latest/meta-data');
    // The first hop must be allowed to be reached at all, so this attempt allows private targets; the redirect's target is never asked.
    const sent = await postSigned({
      projectId: 'proj_webhooks',
      url: `${receiver.url}/bounce`,
      eventId: newId('evt'),
      body: '{}',
      secrets: [`whsec_${Buffer.alloc(32, 1).toString('base64')}`],
      allowPrivate: true,
    });
    assert.equal(sent.delivered, false);
    assert.equal(sent.responseStatus, 307);
    assert.match(sent.error!, /redirects are not followed/);
    assert.equal(receiver.to('/bounce').length, 1);
  });
});
