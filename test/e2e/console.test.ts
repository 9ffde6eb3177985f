/**
 * The console as a whole, in Chromium against the real API: signing in and out, what the browser keeps, every
 * page of the navigation in both themes, deep links, the admin pages' secrets shown once, key revocation
 * ending the session, and the console served under a path prefix.
 */
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { newTenant, sharedApi, startTestApi, type Tenant, type TestApi } from '../support/api.js';
import { assertAccessible, openConsole, screenshot, signIn, visit, type ConsoleSession } from '../support/browser.js';
import { eventually } from '../support/eventually.js';

const NAVIGATION: [name: string, path: string][] = [
  ['Overview', '/console/'],
  ['Agents', '/console/agents'],
  ['Runs', '/console/runs'],
  ['Approvals', '/console/approvals'],
  ['Threads', '/console/threads'],
  ['Schedules', '/console/schedules'],
  ['Memories', '/console/memories'],
  ['Datasets', '/console/datasets'],
  ['Experiments', '/console/experiments'],
  ['Networks', '/console/networks'],
  ['Files', '/console/files'],
  ['Graph', '/console/graph'],
  ['Costs', '/console/costs'],
  ['Quality', '/console/quality'],
  ['Webhooks', '/console/webhooks'],
  ['API keys', '/console/api-keys'],
  ['Audit log', '/console/audit-log'],
];

const slug = (name: string) => name.toLowerCase().replace(/\s+/g, '-');

/** The view has its heading and has finished loading what it shows. */
async function settled(page: Page): Promise<void> {
  await page.getByRole('main').getByRole('heading', { level: 1 }).first().waitFor();
  await page
    .locator('main [role=status]')
    .filter({ hasText: /^Loading\b/ })
    .first()
    .waitFor({ state: 'detached' });
}

/** The few browser globals these checks read (the tests compile without the DOM library). */
interface StorageLike {
  readonly length: number;
  key(index: number): string | null;
  getItem(key: string): string | null;
}
interface PageGlobals {
  localStorage: StorageLike;
  sessionStorage: StorageLike;
  indexedDB: { databases?(): Promise<{ name?: string }[]> };
  document: { cookie: string; activeElement: unknown };
}

/** What a script in the page can see of what the browser stores for the console. */
function storedByBrowser(page: Page) {
  return page.evaluate(async () => {
    const { localStorage, sessionStorage, indexedDB, document } = globalThis as unknown as PageGlobals;
    const dump = (storage: StorageLike) =>
      Object.fromEntries(Array.from({ length: storage.length }, (_, i) => storage.key(i)!).map((key) => [key, storage.getItem(key)]));
    const databases = indexedDB.databases ? (await indexedDB.databases()).map((db) => db.name ?? '') : [];
    return { local: dump(localStorage), session: dump(sessionStorage), databases, cookie: document.cookie };
  });
}

async function status(url: string, cookie: string): Promise<number> {
  return (await fetch(url, { headers: { cookie } })).status;
}

describe('The web console', function () {
  this.timeout(240_000);
  let api: TestApi;
  let tenant: Tenant;
  const open: ConsoleSession[] = [];
  const start = async (options?: Parameters<typeof openConsole>[1], url = api.url) => {
    const session = await openConsole(url, options);
    open.push(session);
    return session;
  };

  before(async () => {
    api = await sharedApi();
    tenant = await newTenant(api, 'console');
  });

  afterEach(async () => {
    for (const session of open.splice(0)) await session.close();
  });

  it("asks for an API key, shows the API's answer to a wrong one, then shows the navigation and landmarks", async () => {
    const { page } = await start();
    await assertAccessible(page, 'the sign-in page');
    await screenshot(page, 'sign-in');
    assert.equal(await page.getByRole('button', { name: 'Sign in' }).count(), 1);

    const wrong = `ap_${'x'.repeat(32)}`;
    const answer = await fetch(`${api.url}/v1/sessions`, {
      method: 'POST',
      headers: { origin: api.url, 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: wrong }),
    });
    assert.equal(answer.status, 401);
    const { error } = (await answer.json()) as { error: { message: string } };
    await page.getByLabel('API key').fill(wrong);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: error.message }).waitFor();
    assert.equal(await page.getByRole('navigation').count(), 0);

    await signIn(page, tenant.admin.key!);
    const nav = page.getByRole('navigation', { name: 'Console' });
    const links = await nav.getByRole('link').allTextContents();
    assert.deepEqual(
      links.map((text) => text.trim()),
      NAVIGATION.map(([name]) => name),
    );
    for (const [name] of NAVIGATION) assert.equal(await nav.getByRole('link', { name, exact: true }).count(), 1, `a link named ${name}`);
    assert.equal(await page.getByRole('main').count(), 1);
  });

  it('keeps neither the key nor the session where a script could read them; the cookie is HttpOnly and SameSite=Strict', async () => {
    const session = await start();
    const key = tenant.admin.key!;
    await signIn(session.page, key);
    await session.page.getByRole('button', { name: 'Dark mode' }).click(); // something the console does store
    const stored = await storedByBrowser(session.page);
    const everything = JSON.stringify(stored);
    assert.ok(!everything.includes(key), 'the key is stored by the browser');
    assert.doesNotMatch(everything, /ap_[A-Za-z0-9]{8,}/);
    assert.doesNotMatch(stored.cookie, /agentplane_session/);
    const cookies = await session.context.cookies();
    const cookie = cookies.find((c) => c.name === 'agentplane_session');
    assert.ok(cookie, `no session cookie among ${cookies.map((c) => c.name).join(', ')}`);
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.ok(!cookie.value.includes(key));
  });

  it('opens every page of the navigation, by keyboard too, accessible in light and in dark mode', async () => {
    const { page } = await start();
    await signIn(page, tenant.admin.key!);
    const nav = page.getByRole('navigation', { name: 'Console' });

    async function tour(suffix: string) {
      for (const [index, [name, path]] of NAVIGATION.entries()) {
        const link = nav.getByRole('link', { name, exact: true });
        if (index === 1) {
          // By keyboard: from the link before it, Tab to this one and press Enter.
          await nav.getByRole('link', { name: NAVIGATION[0]![0], exact: true }).focus();
          await page.keyboard.press('Tab');
          assert.equal(
            await link.evaluate((node) => node === (globalThis as unknown as PageGlobals).document.activeElement),
            true,
            `Tab reaches ${name}`,
          );
          await page.keyboard.press('Enter');
        } else {
          await link.click();
        }
        await page.waitForURL((url) => url.pathname === path);
        assert.equal(await link.getAttribute('aria-current'), 'page');
        await settled(page);
        await assertAccessible(page, `${name}${suffix}`);
        await screenshot(page, `tour-${slug(name)}${suffix}`);
      }
    }

    await tour('');
    assert.equal(await page.locator('html').getAttribute('data-theme'), 'light');
    const toggle = page.getByRole('button', { name: 'Dark mode' });
    assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
    await toggle.click();
    assert.equal(await page.locator('html').getAttribute('data-theme'), 'dark');
    assert.equal(await toggle.getAttribute('aria-pressed'), 'true');
    await page.reload();
    await nav.waitFor();
    assert.equal(await page.locator('html').getAttribute('data-theme'), 'dark', 'dark mode survives a reload');
    await tour('-dark');
  });

  it('opens a deep link directly, signed in, and after signing in when signed out', async () => {
    const signedIn = await start();
    await signIn(signedIn.page, tenant.admin.key!);
    await visit(signedIn, '/audit-log');
    await signedIn.page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await signedIn.page.getByRole('table').waitFor();

    const signedOut = await start();
    await visit(signedOut, '/audit-log');
    await signedOut.page.getByLabel('API key').waitFor();
    await signIn(signedOut.page, tenant.admin.key!);
    await signedOut.page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    assert.equal(new URL(signedOut.page.url()).pathname, '/console/audit-log');
    assert.equal(await signedOut.page.getByRole('link', { name: 'Audit log' }).getAttribute('aria-current'), 'page');
  });

  it('registers a webhook endpoint, shows its signing secret once, then lists it; the empty list shows curl', async () => {
    const own = await newTenant(api, 'console webhooks');
    const { page } = await start();
    await signIn(page, own.admin.key!);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    const empty = page.getByRole('region', { name: 'No webhook endpoints yet' });
    await empty.getByText('curl', { exact: false }).waitFor();

    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill('https://hooks.example.com/agentplane');
    await page.getByRole('checkbox', { name: 'run.completed', exact: true }).check();
    await page.getByRole('checkbox', { name: 'run.failed', exact: true }).check();
    await page.getByLabel('Description (optional)').fill('Run outcomes for the release bot');
    await page.getByRole('button', { name: 'Create endpoint' }).click();

    const secret = page.getByRole('region', { name: 'Signing secret of https://hooks.example.com/agentplane' }).locator('code');
    assert.match((await secret.textContent()) ?? '', /^whsec_[A-Za-z0-9+/]+={0,2}$/);
    await page.getByText('you will not see it again').waitFor();
    await page.getByRole('button', { name: 'Copy' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'https://hooks.example.com/agentplane' });
    await row.getByText('run.completed').waitFor();
    await row.getByText('enabled').waitFor();
    await page.getByRole('button', { name: 'Done' }).click();
    assert.equal(await page.getByText(/whsec_/).count(), 0, 'the secret is gone once dismissed');
    await page.reload();
    await row.waitFor();
    assert.equal(await page.getByText(/whsec_/).count(), 0, 'the list never shows a secret');
  });

  it("creates an API key shown once, revokes it, and revoking the session's own key ends the session", async () => {
    const own = await newTenant(api, 'console keys');
    const signedInWith = await own.keyWith('admin');
    const { page } = await start();
    await signIn(page, signedInWith.key!);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();

    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Name', { exact: true }).fill('release bot');
    await page.getByRole('checkbox', { name: /files:read/ }).check();
    await page.getByRole('checkbox', { name: 'agents:run', exact: true }).check();
    await page.getByLabel('Requests per minute').fill('120');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secretText = (await page.getByRole('region', { name: 'Secret of key release bot' }).locator('code').textContent()) ?? '';
    assert.match(secretText, /^ap_[A-Za-z0-9]+$/);
    await page.getByText('you will not see it again').waitFor();
    const row = page.getByRole('row').filter({ hasText: 'release bot' });
    await row.getByText('files:read').waitFor();
    await row.getByText('120 requests/min').waitFor();
    assert.equal((await fetch(`${api.url}/v1/files`, { headers: { authorization: `Bearer ${secretText}` } })).status, 200);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.reload();
    await row.waitFor();
    assert.equal(await page.getByText(secretText).count(), 0, 'the list never shows a secret');

    await row.getByRole('button', { name: 'Revoke', exact: true }).click();
    await row.getByRole('button', { name: 'Revoke release bot' }).click();
    await row.getByText(/revoked/).waitFor();
    await page.getByRole('status').filter({ hasText: 'Key release bot is revoked' }).waitFor();
    assert.equal((await fetch(`${api.url}/v1/files`, { headers: { authorization: `Bearer ${secretText}` } })).status, 401);

    // The key this session was opened with: the console says so, and revoking it signs out.
    const mine = page.getByRole('row').filter({ hasText: "this session's key" });
    await mine.getByRole('button', { name: 'Revoke', exact: true }).click();
    await mine.getByText('revoking it signs you out').waitFor();
    await mine.getByRole('button', { name: /^Revoke / }).click();
    await page.getByLabel('API key').waitFor();
    await page.getByText('You revoked the key this session was signed in with').waitFor();
    await assertAccessible(page, "sign-in after revoking the session's key");
  });

  it("shows sign-in on the next request once the session's key is revoked elsewhere", async () => {
    const own = await newTenant(api, 'console revoked elsewhere');
    const doomed = await own.keyWith('admin');
    const { page } = await start();
    await signIn(page, doomed.key!);
    await page.getByRole('link', { name: 'Audit log' }).click();
    await settled(page);
    const keys = await own.admin.typed.GET('/v1/api-keys', { params: { query: { limit: 100 } } });
    const id = keys.data!.data.find((key) => doomed.key!.startsWith(key.prefix))!.id;
    assert.equal((await own.admin.typed.DELETE('/v1/api-keys/{id}', { params: { path: { id } } })).response.status, 200);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('API key').waitFor();
    await page.getByText('Your session has ended').waitFor();
  });

  it('signs out to the sign-in page, and the old cookie no longer works', async () => {
    const session = await start();
    await signIn(session.page, tenant.admin.key!);
    const cookie = (await session.context.cookies()).find((c) => c.name === 'agentplane_session')!;
    const replay = `agentplane_session=${cookie.value}`;
    assert.equal(await status(`${api.url}/v1/sessions/current`, replay), 200);
    await session.page.getByRole('button', { name: 'Sign out' }).click();
    await session.page.getByLabel('API key').waitFor();
    await session.page.getByRole('button', { name: 'Sign in' }).waitFor();
    assert.equal(await status(`${api.url}/v1/sessions/current`, replay), 401);
    assert.equal(await status(`${api.url}/v1/agents`, replay), 401);
    await session.page.reload();
    await session.page.getByLabel('API key').waitFor();
  });

  describe('under a path prefix', () => {
    let prefixed: TestApi;
    before(async () => {
      prefixed = await startTestApi({ basePath: '/agentplane', worker: false });
    });
    after(async () => {
      await prefixed?.stop();
    });

    it('opens <api>/agentplane/console/runs directly, signs in, and navigates, with every request under the prefix', async () => {
      const own = await newTenant(prefixed, 'console prefix');
      const session = await start({ prefix: '/agentplane' }, prefixed.url);
      const requests: string[] = [];
      session.page.on('request', (request) => requests.push(new URL(request.url()).pathname));
      await session.page.goto(`${prefixed.url}/agentplane/console/runs`);
      await signIn(session.page, own.admin.key!);
      await session.page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
      assert.equal(new URL(session.page.url()).pathname, '/agentplane/console/runs');
      const cookie = (await session.context.cookies()).find((c) => c.name === 'agentplane_session');
      assert.equal(cookie?.path, '/agentplane/');

      await session.page.getByRole('link', { name: 'Webhooks' }).click();
      await session.page.waitForURL((url) => url.pathname === '/agentplane/console/webhooks');
      const empty = session.page.getByRole('region', { name: 'No webhook endpoints yet' });
      await empty.getByText(`${prefixed.url}/agentplane/v1/webhooks`, { exact: false }).waitFor();
      await session.page.getByRole('link', { name: 'Audit log' }).click();
      await session.page.getByRole('table').waitFor();
      await assertAccessible(session.page, 'the audit log under a prefix');
      await screenshot(session.page, 'prefix-audit-log');
      await eventually(() => assert.ok(requests.some((path) => path === '/agentplane/v1/audit-logs')));
      const ours = requests.filter((path) => path.includes('/v1/') || path.includes('/console/'));
      assert.deepEqual(
        ours.filter((path) => !path.startsWith('/agentplane/')),
        [],
        'every request of the console stays under the prefix',
      );
    });
  });
});
