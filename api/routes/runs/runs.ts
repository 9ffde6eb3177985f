import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited } from '../../audit.js';
import { operation } from '../../validation.js';
import { NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { findAgent } from '../../../records/agents.js';
import { childrenOfRuns, findRun, listAgentRuns, listProjectRuns } from '../../../records/runs.js';
import { stepPage } from '../../../records/run-steps.js';
import { scoresOfRuns } from '../../../records/run-scores.js';
import { presentRunSummary, presentSteps } from '../../../presenters/run.js';
import { presentList } from '../../../presenters/list.js';
import { createRun } from './create.js';
import { cancelRun } from './cancel.js';
import { addRunFeedback } from './feedback.js';
import { streamRunEvents } from './run-log.js';
import { presentRunOf } from './run-object.js';

export function runRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/agents/:id/run',
    audited(deps.db, 'run.create', 'run'),
    requireScope('agents:run'),
    operation('runAgent', (ctx, input) => createRun(ctx, deps, input)),
  );

  router.get(
    '/v1/agents/:id/runs',
    requireScope('agents:read'),
    operation('listAgentRuns', async (ctx, { path: { id }, query }) => {
      const { projectId } = callerOf(ctx);
      if (!(await findAgent(deps.db, projectId, id))) throw NotFoundError('agent', id);
      const page = await listAgentRuns(deps.db, projectId, id, pageRequestOf(query), {
        status: query.status,
        createdAfter: query.created_after,
        createdBefore: query.created_before,
        metadata: query.metadata,
      });
      const scores = await scoresOfRuns(
        deps.db,
        page.rows.map((r) => r.id),
      );
      ctx.body = presentList(page, (run) => presentRunSummary(run, [], scores.get(run.id)));
    }),
  );

  router.get(
    '/v1/runs',
    requireScope('agents:read'),
    operation('listRuns', async (ctx, { query }) => {
      const page = await listProjectRuns(deps.db, callerOf(ctx).projectId, pageRequestOf(query), {
        statuses: query.status,
        agentId: query.agent_id,
        networkId: query.network_id,
        parentRunId: query.parent_run_id,
        createdAfter: query.created_after,
        createdBefore: query.created_before,
        threadId: query.thread_id,
        subjectId: query.subject_id,
        scheduleId: query.schedule_id,
      });
      const ids = page.rows.map((r) => r.id);
      const [hops, scores] = await Promise.all([childrenOfRuns(deps.db, ids), scoresOfRuns(deps.db, ids)]);
      ctx.body = presentList(page, (run) => presentRunSummary(run, hops.get(run.id) ?? [], scores.get(run.id)));
    }),
  );

  router.get(
    '/v1/runs/:id',
    requireScope('agents:read'),
    operation('getRun', async (ctx, { path: { id } }) => {
      const run = await findRun(deps.db, callerOf(ctx).projectId, id);
      if (!run) throw NotFoundError('run', id);
      ctx.body = await presentRunOf(deps, run);
    }),
  );

  router.get(
    '/v1/runs/:id/steps',
    requireScope('agents:read'),
    operation('listRunSteps', async (ctx, { path: { id }, query }) => {
      const run = await findRun(deps.db, callerOf(ctx).projectId, id);
      if (!run) throw NotFoundError('run', id);
      const page = await stepPage(deps.db, id, query.after, query.limit);
      const data = presentSteps(page, run.started_at ?? run.created_at);
      // A step's index is its id in this list: the cursor `after` takes one.
      ctx.body = {
        object: 'list',
        data,
        first_id: data.length > 0 ? String(data[0]!.index) : null,
        last_id: data.length > 0 ? String(data.at(-1)!.index) : null,
        has_more: page.hasMore,
      };
    }),
  );

  router.post(
    '/v1/runs/:id/cancel',
    audited(deps.db, 'run.cancel', 'run'),
    requireScope('agents:run'),
    operation('cancelRun', (ctx, { path: { id } }) => cancelRun(ctx, deps, id)),
  );

  router.post(
    '/v1/runs/:id/feedback',
    audited(deps.db, 'run.feedback', 'run'),
    requireScope('agents:run'),
    operation('addRunFeedback', (ctx, input) => addRunFeedback(ctx, deps, input)),
  );

  router.get(
    '/v1/runs/:id/events',
    requireScope('agents:read'),
    operation('streamRunEvents', async (ctx, { path: { id }, query }) => {
      const caller = callerOf(ctx);
      const run = await findRun(deps.db, caller.projectId, id);
      if (!run) throw NotFoundError('run', id);
      // An EventSource reconnects to the URL it first opened, `after` included, and says in Last-Event-ID
      // how far it got since: the header is the later position. The document holds it to 1 to 15 digits.
      const lastEventId = ctx.get('last-event-id');
      streamRunEvents(
        ctx,
        deps,
        id,
        lastEventId ? Number(lastEventId) : (query.after ?? 0),
        deps.streamSlots.take(caller.apiKeyId, ctx.state.place),
      );
    }),
  );
}
