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
import {
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  DEFAULT_MAX_STEPS,
  deleteAgent,
  findAgent,
  insertAgent,
  listAgents,
  updateAgent,
} from '../../../records/agents.js';
import { presentAgent, presentDeletedAgent } from '../../../presenters/agent.js';
import { presentList } from '../../../presenters/list.js';
import { checkModel, checkTools } from './definition.js';
import { managedResourceExists, refuseUnmanagedChange } from '../managed.js';
import { isManagedUidConflict } from '../../../records/managed-resources.js';
import { deleteSchedulesOf } from '../../../records/schedules.js';
import { writeToTemporal } from '../schedules/schedules.js';

export function agentRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/agents',
    audited(deps.db, 'agent.create', 'agent'),
    requireScope('agents:write'),
    operation('createAgent', async (ctx, { body }) => {
      await checkModel(deps.models, body.model);
      checkTools(body.tools ?? [], deps.toolsAllowPrivate);
      const { projectId } = callerOf(ctx);
      const managed = body.managed_resource ?? null;
      const { created } = await createOnce(ctx, deps, body, async (tx) => {
        const agent = await insertAgent(
          tx,
          projectId,
          {
            name: body.name,
            description: body.description ?? null,
            model: body.model,
            instructions: body.instructions ?? '',
            tools: body.tools ?? [],
            model_settings: body.model_settings ?? {},
            concurrency: body.concurrency ?? 'allow',
            max_steps: body.max_steps ?? DEFAULT_MAX_STEPS,
            approval_timeout_seconds: body.approval_timeout_seconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS,
            max_cost_usd: body.max_cost_usd ?? null,
            memory: body.memory ?? { enabled: false },
            metadata: body.metadata ?? {},
          },
          managed,
        );
        return { status: 201, body: presentAgent(agent) };
      }).catch(async (err) => {
        if (!managed || !isManagedUidConflict(err)) throw err;
        const existing = await listAgents(deps.db, projectId, { limit: 1, order: 'desc' }, { managedUid: managed.uid });
        throw managedResourceExists(managed, existing.rows[0]?.id);
      });
      respond(ctx, created);
    }),
  );

  router.get(
    '/v1/agents',
    requireScope('agents:read'),
    operation('listAgents', async (ctx, { query }) => {
      const filter = { managedBy: query.managed_by, managedUid: query.managed_uid };
      ctx.body = presentList(await listAgents(deps.db, callerOf(ctx).projectId, pageRequestOf(query), filter), presentAgent);
    }),
  );

  router.get(
    '/v1/agents/:id',
    requireScope('agents:read'),
    operation('getAgent', async (ctx, { path: { id } }) => {
      const agent = await findAgent(deps.db, callerOf(ctx).projectId, id);
      if (!agent) throw NotFoundError('agent', id);
      ctx.body = presentAgent(agent);
    }),
  );

  // PATCH is the update verb; POST answers the same for clients written before it, marked deprecated.
  const update = [
    audited(deps.db, 'agent.update', 'agent'),
    requireScope('agents:write'),
    operation('updateAgent', async (ctx, { path: { id }, body }) => {
      if (body.model !== undefined) await checkModel(deps.models, body.model);
      if (body.tools !== undefined) checkTools(body.tools, deps.toolsAllowPrivate);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const { projectId } = callerOf(ctx);
        const current = await findAgent(tx, projectId, id, { lock: true });
        if (!current) throw NotFoundError('agent', id);
        refuseUnmanagedChange(ctx, current, 'Agent');
        return { status: 200, body: presentAgent(await updateAgent(tx, current, body)) };
      });
      respond(ctx, answer);
    }),
  ] as const;
  router.patch('/v1/agents/:id', ...update);
  router.post('/v1/agents/:id', deprecatedUpdateByPost(), ...update);

  router.delete(
    '/v1/agents/:id',
    audited(deps.db, 'agent.delete', 'agent'),
    requireScope('agents:write'),
    operation('deleteAgent', async (ctx, { path: { id } }) => {
      let schedules: string[] = [];
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const { projectId } = callerOf(ctx);
        const current = await findAgent(tx, projectId, id, { lock: true });
        if (!current) throw NotFoundError('agent', id);
        refuseUnmanagedChange(ctx, current, 'Agent');
        if (!(await deleteAgent(tx, projectId, id))) throw NotFoundError('agent', id);
        // A schedule never outlives what it runs.
        schedules = await deleteSchedulesOf(tx, projectId, { agentId: id });
        return { status: 200, body: presentDeletedAgent(id) };
      });
      await writeToTemporal(ctx, deps, schedules);
      respond(ctx, answer);
    }),
  );
}
