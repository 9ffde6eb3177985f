/**
 * The web console's sessions: sign in with an API key (no bearer needed, so outside authenticate()), read
 * the current session, sign out. The cookie and its checks are in middleware/console-session.ts.
 */
import Router from '@koa/router';
import type { ApiContext, ApiDeps, ApiState } from '../../context.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { AuthenticationError } from '../../errors.js';
import { callerOfKey } from '../../middleware/auth.js';
import { limitRequests } from '../../middleware/rate-limit.js';
import { FailedSignIns } from '../../middleware/failed-sign-ins.js';
import {
  csrfTokenOf,
  DEFAULT_SESSION_TTL_SECONDS,
  NoSessionError,
  requireSameOrigin,
  SESSION_COOKIE,
  sessionCookie,
} from '../../middleware/console-session.js';
import { findApiKeyBySecret } from '../../../records/api-keys.js';
import {
  deleteFinishedConsoleSessions,
  endConsoleSession,
  endSessionsBeyond,
  endConsoleSessionOfToken,
  insertConsoleSession,
  newSessionToken,
} from '../../../records/console-sessions.js';
import { presentSession } from '../../../presenters/session.js';

/** Sessions one key may hold at once: signing in past it ends the key's oldest. */
export const LIVE_SESSIONS_PER_KEY = 20;

/** POST /v1/sessions, on a router whose routes need no key. */
export function signInRoute(router: Router<ApiState>, deps: ApiDeps): void {
  const countRequest = limitRequests(deps.db, deps.rateLimits);
  const ttlSeconds = deps.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_SECONDS;
  const failures = new FailedSignIns(deps.failedSignInsPerMinute);
  router.post(
    '/v1/sessions',
    audited(deps.db, 'session.create', 'session'),
    operation('createSession', async (ctx, { body }) => {
      // Login CSRF: another site must not sign a browser in, even with a key of its own.
      requireSameOrigin(ctx);
      failures.refuseIfExhausted(ctx.ip);
      const key = body.api_key.startsWith('ap_') ? await findApiKeyBySecret(deps.db, body.api_key) : null;
      if (!key) {
        failures.record(ctx.ip);
        throw AuthenticationError('The API key is not valid, or has been revoked.');
      }
      ctx.state.caller = callerOfKey(key);
      await countRequest(ctx, async () => {});
      const token = newSessionToken();
      const csrfToken = csrfTokenOf(token);
      const previous = ctx.cookies.get(SESSION_COOKIE);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        // The new cookie replaces the browser's previous one, whose session would otherwise live on unused.
        if (previous) await endConsoleSessionOfToken(tx, previous);
        await deleteFinishedConsoleSessions(tx, key.id);
        const session = await insertConsoleSession(tx, { key, token, csrfToken, ttlSeconds });
        await endSessionsBeyond(tx, key.id, LIVE_SESSIONS_PER_KEY);
        return { status: 201, body: presentSession(session, key, csrfToken) };
      });
      ctx.append('Set-Cookie', sessionCookie({ token, basePath: deps.basePath ?? '', maxAgeSeconds: ttlSeconds, secure: ctx.secure }));
      respond(ctx, answer);
    }),
  );
}

function currentSession(ctx: ApiContext): NonNullable<ApiState['session']> {
  if (!ctx.state.session) throw NoSessionError();
  return ctx.state.session;
}

/** The current session's operations, behind authenticate(). */
export function sessionRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/sessions/current',
    operation('getCurrentSession', async (ctx) => {
      const { record, key, token } = currentSession(ctx);
      ctx.body = presentSession(record, key, csrfTokenOf(token));
    }),
  );

  router.delete(
    '/v1/sessions/current',
    audited(deps.db, 'session.end', 'session'),
    operation('deleteCurrentSession', async (ctx) => {
      const { record } = currentSession(ctx);
      await commitMutation(ctx, deps.db, async (tx) => {
        await endConsoleSession(tx, record.id);
        return { status: 204, body: { id: record.id } };
      });
      ctx.state.auditTargetId = record.id;
      ctx.append('Set-Cookie', sessionCookie({ token: '', basePath: deps.basePath ?? '', maxAgeSeconds: 0, secure: ctx.secure }));
      ctx.status = 204;
    }),
  );
}
