import assert from 'node:assert/strict';
import { sharedApi, newTenant, type Tenant, type TestApi } from '../support/api.js';
import { send, sessionCookieOf, signIn as signInTo, type Answer } from '../support/console-sessions.js';
import { LIVE_SESSIONS_PER_KEY } from '../../api/routes/sessions/sessions.js';
import { createMaintenanceActivities } from '../../workflows/maintenance/activities.js';

function assertError(response: Answer, status: number, code: string) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error.code, code);
}

describe('console sessions', () => {
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;
  let origin: string;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    origin = api.url;
    [tenant, other] = await Promise.all([newTenant(api, 'sessions A'), newTenant(api, 'sessions B')]);
  });

  const signIn = (key: string) => signInTo(api, key);

  describe('signing in', () => {
    it('answers 201 with the session and sets an HttpOnly, SameSite=Strict cookie for the whole API, lasting 8 hours', async () => {
      const before = Math.floor(Date.now() / 1000);
      const { response, session } = await signIn(tenant.admin.key!);
      const [cookie] = response.headers.getSetCookie();
      assert.match(cookie!, /^agentplane_session=[A-Za-z0-9]{32}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=28800$/);
      assert.equal(session.object, 'session');
      assert.match(session.id, /^ses_/);
      assert.equal(session.project_id, tenant.projectId);
      assert.deepEqual(session.scopes, ['admin']);
      assert.equal(session.expires_at - session.created_at, 28_800);
      assert.ok(session.created_at >= before - 1);
      assert.match(session.csrf_token, /^[A-Za-z0-9_-]{43}$/);
    });

    it('never returns the API key, nor the cookie token, in the session', async () => {
      const { response, cookie } = await signIn(tenant.admin.key!);
      const text = JSON.stringify(response.body);
      assert.ok(!text.includes(tenant.admin.key!));
      assert.ok(!text.includes(cookie.split('=')[1]!));
    });

    it('marks the cookie Secure when the request came over HTTPS (X-Forwarded-Proto)', async () => {
      const httpsOrigin = origin.replace(/^http:/, 'https:');
      const response = await send(api, 'POST', '/v1/sessions', {
        origin: httpsOrigin,
        json: { api_key: tenant.admin.key },
        headers: { 'x-forwarded-proto': 'https' },
      });
      assert.equal(response.status, 201, JSON.stringify(response.body));
      assert.match(response.headers.getSetCookie()[0]!, /; HttpOnly; SameSite=Strict; Max-Age=28800; Secure$/);
    });

    it("answers 403 origin_mismatch without Origin or with another site's, and sets no cookie", async () => {
      for (const sent of [null, 'https://evil.example', origin.replace('localhost', '127.0.0.1')]) {
        const response = await send(api, 'POST', '/v1/sessions', { origin: sent, json: { api_key: tenant.admin.key } });
        assertError(response, 403, 'origin_mismatch');
        assert.deepEqual(response.headers.getSetCookie(), []);
      }
    });

    it('answers 401 for a key that is not valid, and 400 for a body that is not a sign-in', async () => {
      const wrong = await send(api, 'POST', '/v1/sessions', { origin, json: { api_key: `ap_${'x'.repeat(32)}` } });
      assertError(wrong, 401, 'invalid_api_key');
      assert.equal(wrong.body.error.type, 'authentication_error');
      assertError(await send(api, 'POST', '/v1/sessions', { origin, json: { api_key: 'not a key' } }), 401, 'invalid_api_key');
      assertError(await send(api, 'POST', '/v1/sessions', { origin, json: { api_key: 'ap_x', remember: true } }), 400, 'unknown_parameter');
      assertError(await send(api, 'POST', '/v1/sessions', { origin, json: {} }), 400, 'missing_parameter');
    });

    it('answers 429 with Retry-After to an address past 10 failed sign-ins a minute, even with a valid key, and leaves other addresses alone', async () => {
      const guesser = { 'x-forwarded-for': '203.0.113.7' };
      for (let i = 0; i < 10; i++) {
        assertError(
          await send(api, 'POST', '/v1/sessions', { origin, headers: guesser, json: { api_key: `ap_${String(i).padStart(32, 'g')}` } }),
          401,
          'invalid_api_key',
        );
      }
      for (const key of [`ap_${'h'.repeat(32)}`, tenant.admin.key!]) {
        const refused = await send(api, 'POST', '/v1/sessions', { origin, headers: guesser, json: { api_key: key } });
        assertError(refused, 429, 'too_many_failed_sign_ins');
        const retryAfter = Number(refused.headers.get('retry-after'));
        assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${refused.headers.get('retry-after')}`);
        assert.deepEqual(refused.headers.getSetCookie(), []);
      }
      const elsewhere = await send(api, 'POST', '/v1/sessions', {
        origin,
        headers: { 'x-forwarded-for': '198.51.100.9' },
        json: { api_key: tenant.admin.key },
      });
      assert.equal(elsewhere.status, 201, JSON.stringify(elsewhere.body));
      // A client cannot pick its address past the proxy: only the entry the proxy added counts.
      const forged = await send(api, 'POST', '/v1/sessions', {
        origin,
        headers: { 'x-forwarded-for': '198.51.100.10, 203.0.113.7' },
        json: { api_key: tenant.admin.key },
      });
      assertError(forged, 429, 'too_many_failed_sign_ins');
    });

    it('ends the session the browser held before, as the new cookie replaces it', async () => {
      const first = await signIn(tenant.admin.key!);
      const reader = await tenant.keyWith('agents:read');
      const again = await send(api, 'POST', '/v1/sessions', { origin, cookie: first.cookie, json: { api_key: reader.key } });
      assert.equal(again.status, 201, JSON.stringify(again.body));
      assertError(await send(api, 'GET', '/v1/agents', { cookie: first.cookie }), 401, 'invalid_session');
      assert.equal((await send(api, 'GET', '/v1/agents', { cookie: sessionCookieOf(again) })).status, 200);
    });

    it("is audited in the key's project", async () => {
      const { session } = await signIn(tenant.admin.key!);
      const log = await tenant.admin.get(`/v1/audit-logs?target_id=${session.id}`);
      assert.deepEqual(
        log.body.data.map((e: { action: string; outcome: { status: number } }) => [e.action, e.outcome.status]),
        [['session.create', 201]],
      );
    });
  });

  describe('the cookie', () => {
    it('alone reads what the key reads', async () => {
      const { cookie } = await signIn(tenant.admin.key!);
      const agents = await send(api, 'GET', '/v1/agents', { cookie });
      assert.equal(agents.status, 200, JSON.stringify(agents.body));
      assert.equal(agents.body.object, 'list');
    });

    it('gives the session again, with the same CSRF token, from /v1/sessions/current', async () => {
      const { cookie, session } = await signIn(tenant.admin.key!);
      const current = await send(api, 'GET', '/v1/sessions/current', { cookie });
      assert.equal(current.status, 200);
      assert.deepEqual(current.body, session);
    });

    it('answers 401 no_session at /v1/sessions/current for a bearer key', async () => {
      assertError(
        await send(api, 'GET', '/v1/sessions/current', { headers: { authorization: `Bearer ${tenant.admin.key}` } }),
        401,
        'no_session',
      );
    });

    it('answers 401 invalid_session for a token no session has', async () => {
      assertError(await send(api, 'GET', '/v1/agents', { cookie: `agentplane_session=${'a'.repeat(32)}` }), 401, 'invalid_session');
    });

    it('leaves bearer requests alone: the Authorization header wins over any cookie', async () => {
      const response = await send(api, 'POST', '/v1/agents', {
        cookie: `agentplane_session=${'a'.repeat(32)}`,
        headers: { authorization: `Bearer ${tenant.admin.key}` },
        json: { name: 'bearer with a cookie', model: 'auto', instructions: 'x' },
      });
      assert.equal(response.status, 201, JSON.stringify(response.body));
    });

    it("changes nothing without the API's own Origin (403 origin_mismatch) or the CSRF token (403 csrf_token_invalid)", async () => {
      const { cookie, csrf } = await signIn(tenant.admin.key!);
      const json = { name: 'from the console', model: 'auto', instructions: 'x' };
      assertError(await send(api, 'POST', '/v1/agents', { cookie, csrf, json }), 403, 'origin_mismatch');
      assertError(await send(api, 'POST', '/v1/agents', { cookie, csrf, json, origin: 'https://evil.example' }), 403, 'origin_mismatch');
      assertError(await send(api, 'POST', '/v1/agents', { cookie, json, origin }), 403, 'csrf_token_invalid');
      assertError(
        await send(api, 'POST', '/v1/agents', { cookie, json, origin, csrf: `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}` }),
        403,
        'csrf_token_invalid',
      );
      const other = await signIn(tenant.admin.key!);
      assertError(await send(api, 'POST', '/v1/agents', { cookie, json, origin, csrf: other.csrf }), 403, 'csrf_token_invalid');
      const listed = await tenant.admin.get('/v1/agents?limit=100');
      assert.ok(!listed.body.data.some((a: { name: string }) => a.name === json.name), 'a refused request created the agent');

      const created = await send(api, 'POST', '/v1/agents', { cookie, json, origin, csrf });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const removed = await send(api, 'DELETE', `/v1/agents/${created.body.id}`, { cookie, origin, csrf });
      assert.equal(removed.status, 200, JSON.stringify(removed.body));
    });

    it('holds the scopes of its key, no more', async () => {
      const reader = await tenant.keyWith('agents:read');
      const { cookie, csrf, session } = await signIn(reader.key!);
      assert.deepEqual(session.scopes, ['agents:read']);
      assert.equal((await send(api, 'GET', '/v1/agents', { cookie })).status, 200);
      const json = { name: 'not allowed', model: 'auto', instructions: 'x' };
      assertError(await send(api, 'POST', '/v1/agents', { cookie, csrf, origin, json }), 403, 'missing_scope');
      assertError(await send(api, 'GET', '/v1/api-keys', { cookie }), 403, 'missing_scope');
    });

    it("keeps another tenant's objects out of reach (404)", async () => {
      const theirs = await other.admin.post('/v1/agents', { name: 'theirs', model: 'auto', instructions: 'x' });
      assert.equal(theirs.status, 201);
      const { cookie, csrf } = await signIn(tenant.admin.key!);
      assertError(await send(api, 'GET', `/v1/agents/${theirs.body.id}`, { cookie }), 404, 'resource_not_found');
      assertError(await send(api, 'DELETE', `/v1/agents/${theirs.body.id}`, { cookie, origin, csrf }), 404, 'resource_not_found');
      assert.equal((await other.admin.get(`/v1/agents/${theirs.body.id}`)).status, 200);
    });

    it("reaches a run's event stream as a GET (404 for a run that is not there, not 401)", async () => {
      const { cookie } = await signIn(tenant.admin.key!);
      assertError(await send(api, 'GET', '/v1/runs/run_absent/events', { cookie }), 404, 'resource_not_found');
    });

    it("counts against its key's rate limit, signing in included", async () => {
      const created = await tenant.admin.post('/v1/api-keys', {
        name: 'limited console',
        scopes: ['agents:read'],
        rate_limits: { requests_per_minute: 2 },
      });
      const { cookie } = await signIn(created.body.key);
      assert.equal((await send(api, 'GET', '/v1/agents', { cookie })).status, 200);
      assertError(await send(api, 'GET', '/v1/agents', { cookie }), 429, 'rate_limit_exceeded');
    });
  });

  describe('ending', () => {
    it('signing out ends the session and clears the cookie; the cookie then answers 401', async () => {
      const { cookie, csrf, session } = await signIn(tenant.admin.key!);
      assertError(await send(api, 'DELETE', '/v1/sessions/current', { cookie, origin }), 403, 'csrf_token_invalid');
      assertError(await send(api, 'DELETE', '/v1/sessions/current', { cookie, csrf }), 403, 'origin_mismatch');
      const ended = await send(api, 'DELETE', '/v1/sessions/current', { cookie, origin, csrf });
      assert.equal(ended.status, 204);
      assert.deepEqual(ended.headers.getSetCookie(), ['agentplane_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0']);
      assertError(await send(api, 'GET', '/v1/agents', { cookie }), 401, 'invalid_session');
      assertError(await send(api, 'GET', '/v1/sessions/current', { cookie }), 401, 'invalid_session');
      const { rows } = await api.services.db.query<{ ended_at: Date | null }>('SELECT ended_at FROM console_sessions WHERE id = $1', [
        session.id,
      ]);
      assert.ok(rows[0]?.ended_at instanceof Date);
      const log = await tenant.admin.get(`/v1/audit-logs?target_id=${session.id}&order=asc`);
      assert.deepEqual(
        log.body.data.map((e: { action: string; outcome: { status: number } }) => [e.action, e.outcome.status]),
        [
          ['session.create', 201],
          ['session.end', 204],
        ],
      );
    });

    it('revoking the key ends its sessions at once', async () => {
      const key = await tenant.keyWith('agents:read');
      const { cookie } = await signIn(key.key!);
      assert.equal((await send(api, 'GET', '/v1/agents', { cookie })).status, 200);
      const keyId = (await send(api, 'GET', '/v1/sessions/current', { cookie })).body.api_key_id;
      assert.equal((await tenant.admin.delete(`/v1/api-keys/${keyId}`)).status, 200);
      assertError(await send(api, 'GET', '/v1/agents', { cookie }), 401, 'invalid_session');
      assertError(await send(api, 'POST', '/v1/sessions', { origin, json: { api_key: key.key } }), 401, 'invalid_api_key');
    });

    it('an expired session answers 401', async () => {
      const { cookie, session } = await signIn(tenant.admin.key!);
      await api.services.db.query(`UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [session.id]);
      assertError(await send(api, 'GET', '/v1/agents', { cookie }), 401, 'invalid_session');
    });

    it("signing in again deletes the key's ended and expired sessions, and keeps its live ones", async () => {
      const key = await tenant.keyWith('agents:read');
      const [expired, ended, live] = [await signIn(key.key!), await signIn(key.key!), await signIn(key.key!)];
      await api.services.db.query(`UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        expired.session.id,
      ]);
      assert.equal((await send(api, 'DELETE', '/v1/sessions/current', { cookie: ended.cookie, origin, csrf: ended.csrf })).status, 204);
      const next = await signIn(key.key!);
      const { rows } = await api.services.db.query<{ id: string }>(
        'SELECT id FROM console_sessions WHERE api_key_id = $1 ORDER BY created_at',
        [next.session.api_key_id],
      );
      assert.deepEqual(rows.map((r) => r.id).sort(), [live.session.id, next.session.id].sort());
    });

    it('a maintenance round deletes the sessions past their end of keys that never sign in again, and keeps live ones', async () => {
      const key = await tenant.keyWith('agents:read');
      const [expired, ended, live] = [await signIn(key.key!), await signIn(key.key!), await signIn(key.key!)];
      await api.services.db.query(`UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        expired.session.id,
      ]);
      assert.equal((await send(api, 'DELETE', '/v1/sessions/current', { cookie: ended.cookie, origin, csrf: ended.csrf })).status, 204);

      // On the database the suites share, another suite's round may remove them first: what is left is what counts
      // here (the maintenance suite, on a database of its own, checks the round's count).
      await createMaintenanceActivities(api.services).removeFinishedConsoleSessions();

      const { rows } = await api.services.db.query<{ id: string }>('SELECT id FROM console_sessions WHERE api_key_id = $1', [
        live.session.api_key_id,
      ]);
      assert.deepEqual(
        rows.map((r) => r.id),
        [live.session.id],
      );
      assert.equal((await send(api, 'GET', '/v1/agents', { cookie: live.cookie })).status, 200);
    });

    it(`holds at most ${LIVE_SESSIONS_PER_KEY} live sessions per key: signing in past that ends the oldest`, async () => {
      const key = await tenant.keyWith('agents:read');
      const sessions = [];
      for (let i = 0; i <= LIVE_SESSIONS_PER_KEY; i++) sessions.push(await signIn(key.key!));
      assertError(await send(api, 'GET', '/v1/agents', { cookie: sessions[0]!.cookie }), 401, 'invalid_session');
      for (const kept of [sessions[1]!, sessions.at(-1)!])
        assert.equal((await send(api, 'GET', '/v1/agents', { cookie: kept.cookie })).status, 200);
      const { rows } = await api.services.db.query<{ live: number }>(
        'SELECT count(*)::int AS live FROM console_sessions WHERE api_key_id = $1 AND ended_at IS NULL',
        [sessions[0]!.session.api_key_id],
      );
      assert.equal(rows[0]!.live, LIVE_SESSIONS_PER_KEY);
    });
  });
});
