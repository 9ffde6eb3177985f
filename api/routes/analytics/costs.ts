/** Cost analytics: the usage ledger reported per bucket and group, and repriced after a price change. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { hasScope, requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { ApiError, InvalidRequestError, PermissionError } from '../../errors.js';
import { costReport, readsLedger } from '../../../records/cost-report.js';
import { expiredBefore } from '../../../records/retention.js';
import { reprice } from '../../../records/reprice.js';
import { newId } from '../../../records/ids.js';
import { presentCostReport } from '../../../presenters/cost-report.js';
import { reportPageOf } from './report-parameters.js';

/** A page holds at most this many results, all buckets together. */
export const MAX_REPORT_RESULTS = 10_000;
/** Reprice at most this long a range in one request. */
const MAX_REPRICE_SECONDS = 366 * 86_400;

export function costRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/analytics/costs',
    requireScope('analytics:read'),
    operation('getCosts', async (ctx, { query }) => {
      const page = reportPageOf(query);
      const horizon = readsLedger(page.window) ? await expiredBefore(deps.db, 'usage_records') : null;
      if (horizon !== null && page.window.from < horizon)
        throw rangeExpired(
          horizon,
          'a report over whole hours (start_time, end_time and bucket_width) with at most one metadata key reads them',
        );
      const rows = await costReport(deps.db, callerOf(ctx).projectId, page.window, MAX_REPORT_RESULTS);
      if (rows.length > MAX_REPORT_RESULTS) {
        throw new ApiError(
          400,
          'invalid_request_error',
          'report_too_large',
          `This page would hold more than ${MAX_REPORT_RESULTS} results; ask for fewer buckets (limit), fewer groups or narrower filters.`,
          'limit',
        );
      }
      ctx.body = presentCostReport(page.buckets, rows, page.nextPage);
    }),
  );

  router.post(
    '/v1/analytics/costs/reprice',
    audited(deps.db, 'analytics.costs.reprice', 'reprice'),
    requireScope('analytics:read'),
    operation('repriceCosts', async (ctx, { body }) => {
      const caller = callerOf(ctx);
      const apply = body.dry_run === false;
      // Reading what a reprice would change is analysis; changing the ledger is the project's admin's call.
      if (apply && !hasScope(caller, 'admin')) throw PermissionError('admin');
      if (body.end_time <= body.start_time)
        throw InvalidRequestError('invalid_range', '`end_time` must be after `start_time`.', 'end_time');
      if (body.end_time - body.start_time > MAX_REPRICE_SECONDS) {
        throw InvalidRequestError('invalid_range', 'Reprice at most 366 days at a time.', 'end_time');
      }
      const horizon = await expiredBefore(deps.db, 'usage_records');
      if (horizon !== null && body.start_time < horizon) throw rangeExpired(horizon, 'they cannot be repriced');
      const prices = deps.models.list().map((model) => ({ model: model.id, prices: model.prices }));
      const range = { from: body.start_time, to: body.end_time, models: body.models, apply };
      // Each reprice has an id of its own, which the audit log names.
      const id = newId('reprice');
      const present = (result: Awaited<ReturnType<typeof reprice>>) => ({
        id,
        object: 'analytics.reprice' as const,
        dry_run: !apply,
        start_time: body.start_time,
        end_time: body.end_time,
        ...result,
      });
      if (!apply) {
        ctx.state.auditTargetId = id;
        ctx.body = present(await reprice(deps.db, caller.projectId, range, prices));
        return;
      }
      respond(
        ctx,
        await commitMutation(ctx, deps.db, async (tx) => ({
          status: 200,
          body: present(await reprice(tx, caller.projectId, range, prices)),
        })),
      );
    }),
  );
}

/** The ledger's calls before `horizon` were expired (AGENTPLANE_RETENTION_USAGE_RECORDS_DAYS); their hourly sums stay. */
function rangeExpired(horizon: number, instead: string): ApiError {
  const since = new Date(horizon * 1000).toISOString();
  return InvalidRequestError(
    'range_expired',
    `Model calls before ${since} are kept only as hourly sums, and ${instead}; or start at ${since}.`,
    'start_time',
  );
}
