/** /v1/datasets: the cases agents are evaluated on, with the scorers an experiment on them uses by default. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireAnyScope, requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { InvalidRequestError, NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { createOnce } from '../../idempotency.js';
import { checkModel } from '../agents/definition.js';
import { createDataset, deleteDataset, findDataset, listDatasets } from '../../../records/datasets.js';
import { checkScorerSpecs, modelsNamed, type ScorerSpec } from '../../../workflows/experiments/client.js';
import { presentDataset, presentDeletedDataset } from '../../../presenters/dataset.js';
import { presentList } from '../../../presenters/list.js';

export const READ_SCOPES = ['datasets:read', 'datasets:write'] as const;

/** The scorers a request names, in their normal form; a scorer that cannot be used answers 400 naming it. */
export async function checkedScorers(deps: ApiDeps, value: unknown, param = 'scorers'): Promise<ScorerSpec[]> {
  const checked = checkScorerSpecs(value, param);
  if (!checked.ok) throw InvalidRequestError(checked.code, checked.problem, checked.param);
  for (const { model, index } of modelsNamed(checked.specs)) await checkModel(deps.models, model, `${param}.${index}.model`);
  return checked.specs;
}

export function datasetRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/datasets',
    audited(deps.db, 'dataset.create', 'dataset'),
    requireScope('datasets:write'),
    operation('createDataset', async (ctx, { body }) => {
      const { projectId } = callerOf(ctx);
      const scorers = await checkedScorers(deps, body.scorers ?? []);
      const { created } = await createOnce(ctx, deps, body, async (tx) => {
        const dataset = await createDataset(tx, projectId, {
          name: body.name,
          description: body.description ?? '',
          metadata: body.metadata ?? {},
          scorers,
        });
        return { status: 201, body: presentDataset(dataset) };
      });
      respond(ctx, created);
    }),
  );

  router.get(
    '/v1/datasets',
    requireAnyScope(...READ_SCOPES),
    operation('listDatasets', async (ctx, { query }) => {
      const page = await listDatasets(deps.db, callerOf(ctx).projectId, pageRequestOf(query));
      ctx.body = presentList(page, presentDataset);
    }),
  );

  router.get(
    '/v1/datasets/:id',
    requireAnyScope(...READ_SCOPES),
    operation('getDataset', async (ctx, { path: { id } }) => {
      const dataset = await findDataset(deps.db, callerOf(ctx).projectId, id);
      if (!dataset) throw NotFoundError('dataset', id);
      ctx.body = presentDataset(dataset);
    }),
  );

  router.delete(
    '/v1/datasets/:id',
    audited(deps.db, 'dataset.delete', 'dataset'),
    requireScope('datasets:write'),
    operation('deleteDataset', async (ctx, { path: { id } }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const dataset = await findDataset(tx, projectId, id, { lock: true });
        if (!dataset || !(await deleteDataset(tx, projectId, id))) throw NotFoundError('dataset', id);
        return { status: 200, body: presentDeletedDataset(id, dataset.item_count) };
      });
      respond(ctx, answer);
    }),
  );
}
