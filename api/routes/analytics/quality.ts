/**
 * GET /v1/analytics/quality (run scores per scorer over time buckets), POST /v1/analytics/quality/backfill
 * (score a past range again, in the background) and GET /v1/analytics/quality/backfills/{id} (its progress).
 */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { createOnce } from '../../idempotency.js';
import { InvalidRequestError, NotFoundError, ServiceUnavailableError } from '../../errors.js';
import { qualityCells } from '../../../records/quality-analytics.js';
import { findBackfill, finishBackfill, insertBackfill } from '../../../records/quality-backfills.js';
import { HEURISTIC_SCORERS } from '../../../records/run-scorers.js';
import { presentBackfill, presentQualityPage } from '../../../presenters/quality.js';
import { startQualityBackfill } from '../../../workflows/quality/client.js';
import { reportPageOf } from './report-parameters.js';

/** Score cells (bucket, scorer, group, tenth) a page reads at most. */
const MAX_REPORT_CELLS = 50_000;
/** A backfill covers at most this long a range. */
const MAX_BACKFILL_SECONDS = 366 * 86_400;

export function qualityRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/analytics/quality',
    requireScope('analytics:read'),
    operation('getQualityAnalytics', async (ctx, { query }) => {
      const page = reportPageOf(query);
      const cells = await qualityCells(deps.db, callerOf(ctx).projectId, page.window, { scorer: query.scorer, maxCells: MAX_REPORT_CELLS });
      if (cells.length > MAX_REPORT_CELLS) {
        throw InvalidRequestError(
          'report_too_large',
          `This page would hold more than ${MAX_REPORT_CELLS} results; ask for fewer buckets (limit), fewer groups or narrower filters.`,
          'limit',
        );
      }
      ctx.body = presentQualityPage(page.buckets, cells, page.nextPage);
    }),
  );

  router.post(
    '/v1/analytics/quality/backfill',
    audited(deps.db, 'quality_backfill.create', 'quality_backfill'),
    requireScope('admin'),
    operation('createQualityBackfill', async (ctx, { body }) => {
      const { projectId } = callerOf(ctx);
      if (body.end_time <= body.start_time)
        throw InvalidRequestError('invalid_range', '`end_time` must be after `start_time`.', 'end_time');
      if (body.end_time - body.start_time > MAX_BACKFILL_SECONDS) {
        throw InvalidRequestError(
          'invalid_range',
          `The range may span at most ${MAX_BACKFILL_SECONDS / 86_400} days; ask for a shorter one.`,
          'end_time',
        );
      }
      const scorers: string[] = body.scorers ?? [...HEURISTIC_SCORERS];
      if (scorers.includes('judge') && !deps.judgeModel) {
        throw InvalidRequestError(
          'judge_not_configured',
          'No judge model is configured (AGENTPLANE_JUDGE_MODEL), so `judge` cannot score runs.',
          'scorers',
        );
      }
      const { created, replayed } = await createOnce(ctx, deps, body, async (tx) => {
        const backfill = await insertBackfill(tx, projectId, { start: body.start_time, end: body.end_time }, scorers);
        return { status: 202, body: presentBackfill(backfill) };
      });
      const id = created.body.id;
      if (!replayed) {
        try {
          await startQualityBackfill(deps.temporal, id, projectId);
        } catch (err) {
          ctx.state.log.warn({ err, backfill_id: id }, 'backfill start failed');
          await finishBackfill(deps.db, id, 'failed', {
            code: 'backfill_not_started',
            message: 'The backfill could not be started: the workflow service did not answer.',
          });
          throw ServiceUnavailableError('The backfill could not be started: the workflow service did not answer. Ask again shortly.');
        }
      }
      // A replayed key answers the same backfill as it stands now.
      const now = await findBackfill(deps.db, projectId, id);
      respond(ctx, { status: 202, body: presentBackfill(now!) });
    }),
  );

  router.get(
    '/v1/analytics/quality/backfills/:id',
    requireScope('analytics:read'),
    operation('getQualityBackfill', async (ctx, { path: { id } }) => {
      const backfill = await findBackfill(deps.db, callerOf(ctx).projectId, id);
      if (!backfill) throw NotFoundError('quality_backfill', id);
      ctx.body = presentBackfill(backfill);
    }),
  );
}
