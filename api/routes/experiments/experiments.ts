/** /v1/experiments: a dataset's items run against a version of an agent or a network, scored, and summed up. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireAnyScope, requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import {
  endExperiment,
  findExperiment,
  listExperimentItems,
  listExperiments,
  tallyOf,
  type ExperimentRecord,
} from '../../../records/experiments.js';
import { cancelExperimentWorkflow } from '../../../workflows/experiments/client.js';
import { presentExperiment, presentExperimentItem } from '../../../presenters/experiment.js';
import { presentList } from '../../../presenters/list.js';
import { createExperimentRoute } from './create.js';

const isGoing = (experiment: ExperimentRecord) => experiment.status === 'queued' || experiment.status === 'running';

export function experimentRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  // A key that starts experiments reads them too.
  const reads = requireAnyScope('experiments:read', 'experiments:write');

  router.post(
    '/v1/experiments',
    audited(deps.db, 'experiment.create', 'experiment'),
    requireScope('experiments:write'),
    operation('createExperiment', (ctx, input) => createExperimentRoute(ctx, deps, input)),
  );

  router.get(
    '/v1/experiments',
    reads,
    operation('listExperiments', async (ctx, { query }) => {
      const page = await listExperiments(deps.db, callerOf(ctx).projectId, pageRequestOf(query), { datasetId: query.dataset_id });
      const tallies = await tallyOf(
        deps.db,
        page.rows.map((experiment) => experiment.id),
      );
      ctx.body = presentList(page, (experiment) => presentExperiment(experiment, tallies.get(experiment.id)!));
    }),
  );

  router.get(
    '/v1/experiments/:id',
    reads,
    operation('getExperiment', async (ctx, { path: { id } }) => {
      const experiment = await findExperiment(deps.db, callerOf(ctx).projectId, id);
      if (!experiment) throw NotFoundError('experiment', id);
      ctx.body = presentExperiment(experiment, (await tallyOf(deps.db, [id])).get(id)!);
    }),
  );

  router.get(
    '/v1/experiments/:id/items',
    reads,
    operation('listExperimentItems', async (ctx, { path: { id }, query }) => {
      const { projectId } = callerOf(ctx);
      if (!(await findExperiment(deps.db, projectId, id))) throw NotFoundError('experiment', id);
      const page = await listExperimentItems(deps.db, projectId, id, pageRequestOf({ ...query, order: query.order ?? 'asc' }));
      ctx.body = presentList(page, presentExperimentItem);
    }),
  );

  router.post(
    '/v1/experiments/:id/cancel',
    audited(deps.db, 'experiment.cancel', 'experiment'),
    requireScope('experiments:write'),
    operation('cancelExperiment', async (ctx, { path: { id } }) => {
      const { projectId } = callerOf(ctx);
      const found = await findExperiment(deps.db, projectId, id);
      if (!found) throw NotFoundError('experiment', id);
      // Temporal is asked first, as a run's cancel asks it: while it is down the request answers 503 and changes
      // nothing, rather than leaving an experiment cancelled whose runs go on. A workflow never started (or gone)
      // is no obstacle: the experiment ends here.
      if (isGoing(found)) await cancelExperimentWorkflow(deps.temporal, id);
      // Ended at once in the database, which the workflow reads before each run it makes; the runs going end
      // cancelled with the workflow, and their items with them.
      await commitMutation(ctx, deps.db, async (tx) => {
        const experiment = await findExperiment(tx, projectId, id, { lock: true });
        if (!experiment) throw NotFoundError('experiment', id);
        if (isGoing(experiment)) await endExperiment(tx, id, 'cancelled');
        return { status: 200, body: { id } };
      });
      const experiment = (await findExperiment(deps.db, projectId, id))!;
      respond(ctx, { status: 200, body: presentExperiment(experiment, (await tallyOf(deps.db, [id])).get(id)!) });
    }),
  );
}
