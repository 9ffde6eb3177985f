import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { deprecatedUpdateByPost } from '../../middleware/deprecated-update.js';
import { NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { createOnce } from '../../idempotency.js';
import { DEFAULT_MAX_HOPS, deleteNetwork, findNetwork, insertNetwork, listNetworks, updateNetwork } from '../../../records/networks.js';
import { childrenOfRuns, listNetworkRuns } from '../../../records/runs.js';
import { scoresOfRuns } from '../../../records/run-scores.js';
import { presentDeletedNetwork, presentNetwork } from '../../../presenters/network.js';
import { presentRunSummary } from '../../../presenters/run.js';
import { presentList } from '../../../presenters/list.js';
import { createRun } from '../runs/create.js';
import { checkMembers, checkRouter } from './definition.js';
import { checkWorkerPool } from './worker-pool.js';
import { managedResourceExists, refuseUnmanagedChange } from '../managed.js';
import { deleteSchedulesOf } from '../../../records/schedules.js';
import { writeToTemporal } from '../schedules/schedules.js';
import { isManagedUidConflict } from '../../../records/managed-resources.js';

export function networkRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/networks',
    audited(deps.db, 'network.create', 'network'),
    requireScope('agents:write'),
    operation('createNetwork', async (ctx, { body }) => {
      const { projectId } = callerOf(ctx);
      await checkMembers(deps.db, projectId, body.members);
      await checkRouter(deps.db, projectId, deps.models, body.router);
      checkWorkerPool(callerOf(ctx), deps.workerPools ?? [], body.worker_pool);
      const managed = body.managed_resource ?? null;
      const { created } = await createOnce(ctx, deps, body, async (tx) => {
        const network = await insertNetwork(
          tx,
          projectId,
          {
            name: body.name,
            description: body.description ?? null,
            members: body.members,
            router: body.router,
            max_hops: body.max_hops ?? DEFAULT_MAX_HOPS,
            concurrency: body.concurrency ?? 'allow',
            metadata: body.metadata ?? {},
            worker_pool: body.worker_pool ?? null,
            max_cost_usd: body.max_cost_usd ?? null,
            memory: body.memory ?? { enabled: false },
          },
          managed,
        );
        return { status: 201, body: presentNetwork(network) };
      }).catch(async (err) => {
        if (!managed || !isManagedUidConflict(err)) throw err;
        const existing = await listNetworks(deps.db, projectId, { limit: 1, order: 'desc' }, { managedUid: managed.uid });
        throw managedResourceExists(managed, existing.rows[0]?.id);
      });
      respond(ctx, created);
    }),
  );

  router.get(
    '/v1/networks',
    requireScope('agents:read'),
    operation('listNetworks', async (ctx, { query }) => {
      const filter = { managedBy: query.managed_by, managedUid: query.managed_uid };
      ctx.body = presentList(await listNetworks(deps.db, callerOf(ctx).projectId, pageRequestOf(query), filter), presentNetwork);
    }),
  );

  router.get(
    '/v1/networks/:id',
    requireScope('agents:read'),
    operation('getNetwork', async (ctx, { path: { id } }) => {
      const network = await findNetwork(deps.db, callerOf(ctx).projectId, id);
      if (!network) throw NotFoundError('network', id);
      ctx.body = presentNetwork(network);
    }),
  );

  // PATCH is the update verb; POST answers the same for clients written before it, marked deprecated.
  const update = [
    audited(deps.db, 'network.update', 'network'),
    requireScope('agents:write'),
    operation('updateNetwork', async (ctx, { path: { id }, body }) => {
      const { projectId } = callerOf(ctx);
      if (body.members !== undefined) await checkMembers(deps.db, projectId, body.members);
      if (body.router !== undefined) await checkRouter(deps.db, projectId, deps.models, body.router);
      checkWorkerPool(callerOf(ctx), deps.workerPools ?? [], body.worker_pool);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const current = await findNetwork(tx, projectId, id, { lock: true });
        if (!current) throw NotFoundError('network', id);
        refuseUnmanagedChange(ctx, current, 'Network');
        return { status: 200, body: presentNetwork(await updateNetwork(tx, current, body)) };
      });
      respond(ctx, answer);
    }),
  ] as const;
  router.patch('/v1/networks/:id', ...update);
  router.post('/v1/networks/:id', deprecatedUpdateByPost(), ...update);

  router.delete(
    '/v1/networks/:id',
    audited(deps.db, 'network.delete', 'network'),
    requireScope('agents:write'),
    operation('deleteNetwork', async (ctx, { path: { id } }) => {
      let schedules: string[] = [];
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const { projectId } = callerOf(ctx);
        const current = await findNetwork(tx, projectId, id, { lock: true });
        if (!current) throw NotFoundError('network', id);
        refuseUnmanagedChange(ctx, current, 'Network');
        if (!(await deleteNetwork(tx, projectId, id))) throw NotFoundError('network', id);
        // A schedule never outlives what it runs.
        schedules = await deleteSchedulesOf(tx, projectId, { networkId: id });
        return { status: 200, body: presentDeletedNetwork(id) };
      });
      await writeToTemporal(ctx, deps, schedules);
      respond(ctx, answer);
    }),
  );

  router.post(
    '/v1/networks/:id/run',
    audited(deps.db, 'run.create', 'run'),
    requireScope('agents:run'),
    operation('runNetwork', (ctx, input) => createRun(ctx, deps, input, 'network')),
  );

  router.get(
    '/v1/networks/:id/runs',
    requireScope('agents:read'),
    operation('listNetworkRuns', async (ctx, { path: { id }, query }) => {
      const { projectId } = callerOf(ctx);
      if (!(await findNetwork(deps.db, projectId, id))) throw NotFoundError('network', id);
      const page = await listNetworkRuns(deps.db, projectId, id, pageRequestOf(query), query.status);
      const ids = page.rows.map((r) => r.id);
      const [hops, scores] = await Promise.all([childrenOfRuns(deps.db, ids), scoresOfRuns(deps.db, ids)]);
      ctx.body = presentList(page, (run) => presentRunSummary(run, hops.get(run.id) ?? [], scores.get(run.id)));
    }),
  );
}
