/**
 * GET /v1/experiments/{id}/comparison?baseline=: the experiment against a baseline on the same dataset, metric by
 * metric, over the items both completed. Both must have finished: a comparison of experiments still running would
 * change under its reader and pair items by the order they happened to end in.
 */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { operation } from '../../validation.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../errors.js';
import { findExperiment, type ExperimentRecord } from '../../../records/experiments.js';
import { completedItemsOf } from '../../../records/compared-items.js';
import { compareExperiments, CONFIDENCE } from '../../../records/experiment-comparison.js';

/** The document's default for `top`. */
const DEFAULT_TOP = 5;

const unfinished = (experiment: ExperimentRecord) => experiment.status === 'queued' || experiment.status === 'running';

export function experimentComparisonRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/experiments/:id/comparison',
    requireScope('experiments:read'),
    operation('compareExperiments', async (ctx, { path: { id }, query }) => {
      const { projectId } = callerOf(ctx);
      const experiment = await findExperiment(deps.db, projectId, id);
      if (!experiment) throw NotFoundError('experiment', id);
      const baseline = await findExperiment(deps.db, projectId, query.baseline);
      if (!baseline) throw NotFoundError('experiment', query.baseline, 'baseline');
      if (baseline.dataset_id !== experiment.dataset_id)
        throw InvalidRequestError(
          'dataset_mismatch',
          `Experiments compare on the same dataset: ${experiment.id} ran ${experiment.dataset_id}, the baseline ${baseline.id} ran ${baseline.dataset_id}.`,
          'baseline',
        );
      const running = [experiment, baseline].find(unfinished);
      if (running)
        throw ConflictError(
          'experiment_not_finished',
          `The experiment ${running.id} is still ${running.status}; compare it once it has finished.`,
        );
      const [theirs, ours] = await Promise.all([
        completedItemsOf(deps.db, projectId, baseline.id),
        completedItemsOf(deps.db, projectId, experiment.id),
      ]);
      const paired = new Set(theirs.map((item) => item.dataset_item_id));
      ctx.body = {
        object: 'experiment.comparison',
        experiment_id: experiment.id,
        baseline_id: baseline.id,
        dataset_id: experiment.dataset_id,
        confidence: CONFIDENCE,
        items: {
          experiment_completed: ours.length,
          baseline_completed: theirs.length,
          paired: ours.filter((item) => paired.has(item.dataset_item_id)).length,
        },
        metrics: compareExperiments(theirs, ours, { seed: `${baseline.id}/${experiment.id}`, top: query.top ?? DEFAULT_TOP }),
      };
    }),
  );
}
