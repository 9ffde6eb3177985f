/** /v1/budgets: spend limits on the project, an API key or an agent, per UTC day or month. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { deprecatedUpdateByPost } from '../../middleware/deprecated-update.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation, type Input } from '../../validation.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { createOnce } from '../../idempotency.js';
import type { Queryable } from '../../../records/db.js';
import { findApiKey } from '../../../records/api-keys.js';
import { findAgent } from '../../../records/agents.js';
import {
  countBudgetsHeld,
  deleteBudget,
  findBudget,
  insertBudget,
  listBudgets,
  MAX_BUDGETS_PER_PROJECT,
  updateBudget,
} from '../../../records/budgets.js';
import { presentBudget, presentDeletedBudget } from '../../../presenters/budget.js';
import { presentList } from '../../../presenters/list.js';

const DEFAULT_THRESHOLDS = [0.5, 0.8, 1];

const thresholdsOf = (thresholds: number[]) => [...thresholds].sort((a, b) => a - b).map(String);

/** The scope's id, checked to name something of the caller's project (another project's answers 404). */
async function scopeIdOf(db: Queryable, projectId: string, scope: Input<'createBudget'>['body']['scope']): Promise<string> {
  if (scope.type === 'project') {
    if (scope.id !== undefined && scope.id !== projectId) throw NotFoundError('project', scope.id, 'scope.id');
    return projectId;
  }
  const found = scope.type === 'agent' ? await findAgent(db, projectId, scope.id) : await findApiKey(db, projectId, scope.id);
  if (!found) throw NotFoundError(scope.type === 'agent' ? 'agent' : 'API key', scope.id, 'scope.id');
  return scope.id;
}

export function budgetRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/budgets',
    audited(deps.db, 'budget.create', 'budget'),
    requireScope('admin'),
    operation('createBudget', async (ctx, { body }) => {
      const { projectId } = callerOf(ctx);
      const limitUsd = body.limit_usd;
      const scopeId = await scopeIdOf(deps.db, projectId, body.scope);
      const { created } = await createOnce(ctx, deps, body, async (tx) => {
        if ((await countBudgetsHeld(tx, projectId)) >= MAX_BUDGETS_PER_PROJECT)
          throw ConflictError('too_many_budgets', `A project has at most ${MAX_BUDGETS_PER_PROJECT} budgets; delete one first.`);
        const budget = await insertBudget(tx, projectId, {
          name: body.name ?? null,
          scopeType: body.scope.type,
          scopeId,
          period: body.period,
          limitUsd,
          thresholds: thresholdsOf(body.thresholds ?? DEFAULT_THRESHOLDS),
        });
        return { status: 201, body: presentBudget(budget) };
      });
      respond(ctx, created);
    }),
  );

  router.get(
    '/v1/budgets',
    requireScope('analytics:read'),
    operation('listBudgets', async (ctx, { query }) => {
      ctx.body = presentList(await listBudgets(deps.db, callerOf(ctx).projectId, pageRequestOf(query)), presentBudget);
    }),
  );

  router.get(
    '/v1/budgets/:id',
    requireScope('analytics:read'),
    operation('getBudget', async (ctx, { path: { id } }) => {
      const budget = await findBudget(deps.db, callerOf(ctx).projectId, id);
      if (!budget) throw NotFoundError('budget', id);
      ctx.body = presentBudget(budget);
    }),
  );

  // PATCH is the update verb; POST answers the same for clients written before it, marked deprecated.
  const update = [
    audited(deps.db, 'budget.update', 'budget'),
    requireScope('admin'),
    operation('updateBudget', async (ctx, { path: { id }, body }) => {
      const { projectId } = callerOf(ctx);
      const limitUsd = body.limit_usd;
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const budget = await updateBudget(tx, projectId, id, {
          name: body.name,
          limitUsd,
          thresholds: body.thresholds === undefined ? undefined : thresholdsOf(body.thresholds),
        });
        if (!budget) throw NotFoundError('budget', id);
        return { status: 200, body: presentBudget(budget) };
      });
      respond(ctx, answer);
    }),
  ] as const;
  router.patch('/v1/budgets/:id', ...update);
  router.post('/v1/budgets/:id', deprecatedUpdateByPost(), ...update);

  router.delete(
    '/v1/budgets/:id',
    audited(deps.db, 'budget.delete', 'budget'),
    requireScope('admin'),
    operation('deleteBudget', async (ctx, { path: { id } }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        if (!(await deleteBudget(tx, projectId, id))) throw NotFoundError('budget', id);
        return { status: 200, body: presentDeletedBudget(id) };
      });
      respond(ctx, answer);
    }),
  );
}
