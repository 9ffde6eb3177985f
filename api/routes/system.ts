/**
 * Operational endpoints: liveness, readiness and the API document without a key; metrics for the operator
 * (the bootstrap key), unless they have a port of their own.
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { callerOf, type ApiDeps, type ApiState } from '../context.js';
import { ApiError } from '../errors.js';
import type { ApiMetrics } from '../metrics.js';
import { authenticate, type KeyCache } from '../middleware/auth.js';
import { servedDocument } from '../served-document.js';

const READINESS_TIMEOUT_MS = 2_000;

const requireBootstrapKey: Middleware<ApiState> = async (ctx, next) => {
  if (!callerOf(ctx).bootstrap) {
    throw new ApiError(
      403,
      'permission_error',
      'bootstrap_key_required',
      'Only the bootstrap admin key (AGENTPLANE_ADMIN_KEY) reads the metrics here.',
    );
  }
  await next();
};

export function systemRoutes(router: Router<ApiState>, deps: ApiDeps, metrics: ApiMetrics, keys: KeyCache): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  router.get('/readyz', async (ctx) => {
    const checks = {
      postgres: await probe(() => deps.db.query('SELECT 1')),
      // The connection's deadline for a call (workflows/call-deadline.ts) also ends the client's own retries,
      // which would otherwise outlive the probe.
      temporal: await probe(() => deps.temporal.workflowService.getSystemInfo({})),
      blobs: await probe(() => deps.blobs.check()),
    };
    const ready = Object.values(checks).every((c) => c === 'ok');
    ctx.status = ready ? 200 : 503;
    if (!ready) ctx.set('Retry-After', '5');
    ctx.body = { status: ready ? 'ok' : 'unavailable', checks };
  });

  // Route-level traffic of every project is the operator's to read: with a metrics port of its own, the
  // public port has no /metrics at all.
  if (deps.metricsPort === undefined) {
    router.get('/metrics', authenticate(deps.db, keys), requireBootstrapKey, async (ctx) => {
      ctx.type = metrics.registry.contentType;
      ctx.body = await metrics.registry.metrics();
    });
  }

  const document = servedDocument({
    toolsAllowPrivate: deps.toolsAllowPrivate,
    webhooksAllowPrivate: deps.webhooks?.allowPrivate ?? false,
  });
  router.get('/v1/openapi.json', (ctx) => {
    ctx.body = document;
  });
}

async function probe(check: () => Promise<unknown>): Promise<'ok' | 'unavailable'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), READINESS_TIMEOUT_MS)));
  try {
    await Promise.race([check(), timeout]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}
