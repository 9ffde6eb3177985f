/** /v1/memories: what agents with memory learned about subjects, with where each fact was stated; and forgetting. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { activeExperimentRunOf } from '../../../records/run-steps.js';
import { activeRunsForSubject, deleteMemory, findMemory, forgetSubject, listMemories } from '../../../records/memories.js';
import { deleteThread } from '../../../records/threads.js';
import { presentDeletedMemory, presentForgottenSubject, presentMemory } from '../../../presenters/memory.js';
import { presentList } from '../../../presenters/list.js';

export function memoryRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/memories',
    requireScope('agents:read'),
    operation('listMemories', async (ctx, { query }) => {
      const page = await listMemories(deps.db, callerOf(ctx).projectId, pageRequestOf(query), {
        subjectId: query.subject_id,
        status: query.status,
        threadId: query.thread_id,
      });
      ctx.body = presentList(page, presentMemory);
    }),
  );

  router.get(
    '/v1/memories/:id',
    requireScope('agents:read'),
    operation('getMemory', async (ctx, { path: { id } }) => {
      const memory = await findMemory(deps.db, callerOf(ctx).projectId, id);
      if (!memory) throw NotFoundError('memory', id);
      ctx.body = presentMemory(memory);
    }),
  );

  router.delete(
    '/v1/memories/:id',
    audited(deps.db, 'memory.delete', 'memory'),
    requireScope('agents:run'),
    operation('deleteMemory', async (ctx, { path: { id } }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        if (!(await deleteMemory(tx, projectId, id))) throw NotFoundError('memory', id);
        return { status: 200, body: presentDeletedMemory(id) };
      });
      respond(ctx, answer);
    }),
  );

  router.delete(
    '/v1/memories',
    audited(deps.db, 'subject.forget', 'subject'),
    requireScope('agents:run'),
    operation('forgetSubject', async (ctx, { query }) => {
      const { projectId } = callerOf(ctx);
      const subjectId = query.subject_id;
      // The subject is the target of the request's audit entry, whatever its outcome.
      ctx.state.auditTargetId = subjectId;
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const [active] = await activeRunsForSubject(tx, projectId, subjectId);
        if (active) {
          throw ConflictError(
            'subject_busy',
            `A run for the subject is still to end (${active.id}); cancel it, or forget the subject once it has ended.`,
            'subject_id',
          );
        }
        const copy = await activeExperimentRunOf(tx, projectId, { subjectId });
        if (copy) {
          throw ConflictError(
            'subject_busy',
            `An experiment's run copied from the subject's runs is still to end (${copy.id}); cancel it or its experiment, or forget the subject once it has ended.`,
            'subject_id',
          );
        }
        const removed = await forgetSubject(tx, projectId, subjectId, (threadId) => deleteThread(tx, projectId, threadId));
        return { status: 200, body: presentForgottenSubject(subjectId, removed) };
      });
      respond(ctx, answer);
    }),
  );
}
