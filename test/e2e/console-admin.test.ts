/**
 * The console's admin pages in Chromium against the real API and a webhook receiver: an endpoint's delivery
 * log with its attempts, redelivery, enabling, rotating and deleting; the audit log's filters and pages kept
 * in the URL; what a key without the scope sees.
 */
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { newTenant, sharedApi, type Tenant, type TestApi } from '../support/api.js';
import { assertAccessible, openConsole, screenshot, signIn, visit, type ConsoleSession } from '../support/browser.js';
import { eventually } from '../support/eventually.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

async function register(tenant: Tenant, url: string, eventTypes: ('webhook_endpoint.disabled' | 'run.completed')[], description?: string) {
  const created = await tenant.admin.typed.POST('/v1/webhooks', {
    body: { url, event_types: eventTypes, ...(description ? { description } : {}) },
  });
  assert.equal(created.response.status, 201);
  return created.data!;
}

/** Presses the page's Refresh until `check` passes: the delivery log changes as the worker delivers. */
async function refreshUntil(page: Page, check: () => Promise<void>): Promise<void> {
  await eventually(
    async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page
        .getByRole('main')
        .getByRole('status')
        .filter({ hasText: /^Loading\b/ })
        .waitFor({ state: 'detached' });
      await check();
    },
    { intervalMs: 250, message: 'the delivery log did not show it' },
  );
}

describe("The console's webhooks, API keys and audit log", function () {
  this.timeout(180_000);
  let api: TestApi;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  let session: ConsoleSession | undefined;

  before(async () => {
    api = await sharedApi();
    tenant = await newTenant(api, 'console admin');
    receiver = await startWebhookReceiver();
  });

  after(async () => {
    await receiver?.close();
  });

  afterEach(async () => {
    await session?.close();
    session = undefined;
  });

  it("shows an endpoint's deliveries with every attempt, the event's subject, redelivers, rotates, disables and deletes", async () => {
    receiver.answer('/watcher', [500]);
    const watcher = await register(tenant, `${receiver.url}/watcher`, ['webhook_endpoint.disabled'], 'Watches the other endpoints');
    const other = await register(tenant, `${receiver.url}/other`, ['run.completed']);
    session = await openConsole(api.url);
    const { page } = session;
    await signIn(page, tenant.admin.key!);

    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('link', { name: `${receiver.url}/watcher` }).click();
    await page.waitForURL((url) => url.pathname === `/console/webhooks/${watcher.id}`);
    await page.getByRole('heading', { level: 1, name: `Webhook ${receiver.url}/watcher` }).waitFor();
    await page.getByText('Watches the other endpoints').waitFor();
    await page
      .getByRole('region', { name: 'No deliveries yet' })
      .getByText(`curl ${api.url}/v1/webhooks/${watcher.id}/deliveries`)
      .waitFor();
    await assertAccessible(page, 'an endpoint without deliveries');
    await screenshot(page, 'webhook-empty');

    // Disabling the other endpoint records webhook_endpoint.disabled, which the watcher receives.
    await visit(session, `/webhooks/${other.id}`);
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('status').filter({ hasText: 'The endpoint is disabled.' }).waitFor();
    await page.getByText('This endpoint is disabled').waitFor();
    await page.getByRole('button', { name: 'Enable' }).waitFor();

    await visit(session, `/webhooks/${watcher.id}`);
    const deliveries = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'Attempts' }) });
    const first = deliveries.getByRole('row').filter({ hasText: 'webhook_endpoint.disabled' });
    await refreshUntil(page, async () => {
      assert.equal(await first.getByText('succeeded').count(), 1);
    });
    // The receiver failed the first attempt and took the second.
    await first.getByText('HTTP 500').waitFor();
    await first.getByText('HTTP 204').waitFor();
    assert.equal(receiver.to('/watcher').length, 2);

    // The event names its subject: the endpoint that was disabled, linked.
    await first.locator('summary').click();
    await first.getByText('About webhook_endpoint').waitFor();
    await first.getByRole('link', { name: other.id }).waitFor();
    await assertAccessible(page, 'an endpoint with its delivery log');
    await screenshot(page, 'webhook-deliveries');

    const eventId = JSON.parse(receiver.to('/watcher')[1]!.body).id as string;
    await first.getByRole('button', { name: `Redeliver ${eventId}` }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Event ${eventId} is being sent again` })
      .waitFor();
    await refreshUntil(page, async () => {
      assert.equal(await deliveries.getByRole('row').filter({ hasText: 'sent again from' }).getByText('succeeded').count(), 1);
    });
    assert.equal(receiver.to('/watcher').length, 3);
    assert.equal(receiver.to('/watcher')[2]!.headers['webhook-id'], eventId);

    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const secret = page.getByRole('region', { name: 'New signing secret' });
    assert.match((await secret.locator('code').textContent()) ?? '', /^whsec_/);
    await secret.getByText('you will not see it again').waitFor();
    await page.getByRole('status').filter({ hasText: 'The secret was rotated' }).waitFor();
    await page.getByRole('button', { name: 'Done' }).click();

    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByText('Delete this endpoint and its delivery log?').waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.waitForURL((url) => url.pathname === '/console/webhooks');
    await page.getByRole('link', { name: `${receiver.url}/other` }).waitFor();
    assert.equal(await page.getByRole('link', { name: `${receiver.url}/watcher` }).count(), 0);
    assert.equal((await tenant.admin.typed.GET('/v1/webhooks/{id}', { params: { path: { id: watcher.id } } })).response.status, 404);

    // The same pages in dark mode.
    await page.getByRole('button', { name: 'Dark mode' }).click();
    await assertAccessible(page, 'webhooks, dark');
    await screenshot(page, 'webhooks-dark');
    await page.getByRole('link', { name: `${receiver.url}/other` }).click();
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page
      .getByRole('main')
      .getByRole('status')
      .filter({ hasText: /^Loading\b/ })
      .waitFor({ state: 'detached' });
    await assertAccessible(page, 'a disabled endpoint, dark');
    await screenshot(page, 'webhook-dark');
  });

  it('filters the audit log by action, target, actor key and time range in the URL, follows a target, and pages through it', async () => {
    const own = await newTenant(api, 'console audit');
    const endpoint = await register(own, 'https://hooks.example.com/audited', ['run.completed']);
    // 55 changes: more than one page of 50.
    for (let i = 0; i < 55; i++) {
      const changed = await own.admin.typed.PATCH('/v1/webhooks/{id}', {
        params: { path: { id: endpoint.id } },
        body: { description: `change ${i}` },
      });
      assert.equal(changed.response.status, 200);
    }
    session = await openConsole(api.url);
    const { page } = session;
    await signIn(page, own.admin.key!);
    await page.getByRole('link', { name: 'Audit log' }).click();
    const rows = page.getByRole('table').getByRole('row');
    await rows.filter({ hasText: 'webhook_endpoint.update' }).first().waitFor();
    assert.equal(await rows.count(), 51, 'a header and 50 entries');
    await assertAccessible(page, 'the audit log');
    await screenshot(page, 'audit-log');

    await page.getByRole('button', { name: 'Older' }).click();
    await page.waitForURL((url) => url.searchParams.has('after'));
    await rows.filter({ hasText: 'webhook_endpoint.create' }).waitFor();
    await rows.filter({ hasText: 'api_key.create' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Older' }).isDisabled(), true);
    await page.getByRole('button', { name: 'Newer' }).click();
    await page.waitForURL((url) => url.searchParams.has('before'));
    await rows.filter({ hasText: 'session.create' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Newer' }).isDisabled(), true);

    const search = page.getByRole('search', { name: 'Filter the audit log' });
    await search.getByLabel('Action').fill('webhook_endpoint.create');
    await search.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('action') === 'webhook_endpoint.create' && !url.searchParams.has('before'));
    await rows.nth(1).waitFor();
    assert.equal(await rows.count(), 2);
    const entry = rows.nth(1);
    await entry.getByText('✓ 201').waitFor();
    await entry.getByText('console audit admin').waitFor();

    // The filter is a deep link: reloading keeps it, in the field too.
    await page.reload();
    await rows.nth(1).waitFor();
    assert.equal(await rows.count(), 2);
    assert.equal(await search.getByLabel('Action').inputValue(), 'webhook_endpoint.create');

    await search.getByLabel('Action').fill('');
    await search.getByLabel('Target id').fill(endpoint.id);
    await search.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('target_id') === endpoint.id && !url.searchParams.has('action'));
    // 56 entries about the endpoint: 50 updates here, the rest one page older.
    await rows.nth(50).waitFor();
    assert.equal(await rows.filter({ hasText: 'webhook_endpoint.update' }).count(), 50);
    await page.getByRole('button', { name: 'Older' }).click();
    await page.waitForURL((url) => url.searchParams.get('target_id') === endpoint.id && url.searchParams.has('after'));
    await rows.filter({ hasText: 'webhook_endpoint.create' }).waitFor();
    assert.equal(await rows.count(), 7);
    assert.equal(await rows.filter({ hasText: 'api_key.create' }).count(), 0);

    await search.getByLabel('Target id').fill('whk_nothing_here');
    await search.getByRole('button', { name: 'Filter', exact: true }).click();
    const empty = page.getByRole('region', { name: 'No entries match' });
    await empty.getByText(`curl ${api.url}/v1/audit-logs?target_id=whk_nothing_here`, { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.waitForURL((url) => url.search === '');
    await rows.nth(50).waitFor();

    // By the key that acted: the bootstrap key's entry (the project's admin key) is not among the admin key's.
    const adminKey = (await own.admin.typed.GET('/v1/api-keys', { params: { query: { limit: 100 } } })).data!.data.find(
      (key) => key.name === 'console audit admin',
    )!;
    await search.getByLabel('Actor key').selectOption({ label: `console audit admin (${adminKey.id})` });
    await search.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('actor_api_key_id') === adminKey.id);
    await rows.nth(50).waitFor();
    await page.getByRole('button', { name: 'Older' }).click();
    await page.waitForURL((url) => url.searchParams.get('actor_api_key_id') === adminKey.id && url.searchParams.has('after'));
    await rows.filter({ hasText: 'webhook_endpoint.create' }).waitFor();
    assert.equal(await rows.count(), 8, "a header and the 7 oldest of the admin key's 57 entries");
    assert.equal(await rows.filter({ hasText: 'api_key.create' }).count(), 0);
    assert.equal(await search.getByLabel('Actor key').inputValue(), adminKey.id);

    // A time range, kept in the URL as the API's seconds and shown again in the fields.
    await search.getByLabel('Actor key').selectOption({ label: 'Any key' });
    await search.getByLabel('From').fill('2000-01-01T00:00');
    await search.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.has('created_after') && !url.searchParams.has('after'));
    await rows.nth(50).waitFor();
    await search.getByLabel('From').fill('2099-01-01T00:00');
    await search.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.getByRole('region', { name: 'No entries match' }).getByText('created_after=', { exact: false }).waitFor();
    await page.reload();
    await page.getByRole('region', { name: 'No entries match' }).waitFor();
    assert.equal(await search.getByLabel('From').inputValue(), '2099-01-01T00:00');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await rows.nth(50).waitFor();

    // Target ids link to their object's page.
    await rows
      .filter({ hasText: 'webhook_endpoint.create' })
      .or(rows.filter({ hasText: 'webhook_endpoint.update' }))
      .first()
      .getByRole('link', { name: endpoint.id })
      .click();
    await page.waitForURL((url) => url.pathname === `/console/webhooks/${endpoint.id}`);
    await page.getByRole('heading', { level: 1, name: 'Webhook https://hooks.example.com/audited' }).waitFor();

    await visit(session, '/audit-log?action=webhook_endpoint.create');
    await page.getByRole('button', { name: 'Dark mode' }).click();
    await rows.nth(1).waitFor();
    await assertAccessible(page, 'the audit log, filtered, dark');
    await screenshot(page, 'audit-log-dark');
  });

  it("shows the API's refusal to a key without the scope, and the keys a new project holds", async () => {
    const own = await newTenant(api, 'console scopes');
    const reader = await own.keyWith('webhooks:read');
    session = await openConsole(api.url);
    const { page } = session;
    await signIn(page, reader.key!);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('alert').filter({ hasText: /admin/ }).waitFor();
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('alert').filter({ hasText: /admin/ }).waitFor();
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('region', { name: 'No webhook endpoints yet' }).getByText('curl -X POST', { exact: false }).waitFor();
    // Reading is allowed; creating answers the API's 403, shown in the form.
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill('https://hooks.example.com/not-allowed');
    await page.getByRole('checkbox', { name: 'Every event' }).check();
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /webhooks:write/ })
      .waitFor();
    await assertAccessible(page, 'a refused change');

    await visit(session, '/api-keys');
    await page.getByRole('alert').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, own.admin.key!);
    await page.getByRole('link', { name: 'API keys' }).click();
    const rows = page.getByRole('table').getByRole('row');
    await rows.filter({ hasText: 'webhooks:read' }).waitFor();
    await rows.filter({ hasText: "this session's key" }).getByText('admin', { exact: true }).waitFor();
    await rows.filter({ hasText: 'webhooks:read' }).getByText("the deployment's defaults").waitFor();
    await assertAccessible(page, 'API keys');
    await screenshot(page, 'api-keys');
    await page.getByRole('button', { name: 'Create key' }).click();
    await assertAccessible(page, 'the new key form');
    await screenshot(page, 'api-key-form');
  });
});
