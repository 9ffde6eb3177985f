/** /v1/threads: conversations that last, continued by runs made with their `thread_id`. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { cursorOf, pageRequestOf } from '../../pagination.js';
import { createOnce } from '../../idempotency.js';
import { UnknownCursorError } from '../../../records/pagination.js';
import { activeExperimentRunOf } from '../../../records/run-steps.js';
import {
  oldestActiveRunOnThread,
  createThread,
  deleteThread,
  findThread,
  listThreads,
  messageSeq,
  threadMessagePage,
} from '../../../records/threads.js';
import { presentDeletedThread, presentThread, presentThreadMessage } from '../../../presenters/thread.js';
import { presentList } from '../../../presenters/list.js';

export function threadRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/threads',
    audited(deps.db, 'thread.create', 'thread'),
    requireScope('agents:run'),
    operation('createThread', async (ctx, { body }) => {
      const { projectId } = callerOf(ctx);
      const { created } = await createOnce(ctx, deps, body, async (tx) => {
        const thread = await createThread(tx, projectId, { subjectId: body.subject_id ?? null, metadata: body.metadata ?? {} });
        return { status: 201, body: presentThread(thread) };
      });
      respond(ctx, created);
    }),
  );

  router.get(
    '/v1/threads',
    requireScope('agents:read'),
    operation('listThreads', async (ctx, { query }) => {
      const page = await listThreads(deps.db, callerOf(ctx).projectId, pageRequestOf(query), {
        agentId: query.agent_id,
        networkId: query.network_id,
        subjectId: query.subject_id,
        metadata: query.metadata,
        createdAfter: query.created_after,
        createdBefore: query.created_before,
        q: query.q,
      });
      ctx.body = presentList(page, presentThread);
    }),
  );

  router.get(
    '/v1/threads/:id',
    requireScope('agents:read'),
    operation('getThread', async (ctx, { path: { id } }) => {
      const thread = await findThread(deps.db, callerOf(ctx).projectId, id);
      if (!thread) throw NotFoundError('thread', id);
      ctx.body = presentThread(thread);
    }),
  );

  router.get(
    '/v1/threads/:id/messages',
    requireScope('agents:read'),
    operation('listThreadMessages', async (ctx, { path: { id }, query }) => {
      const thread = await findThread(deps.db, callerOf(ctx).projectId, id);
      if (!thread) throw NotFoundError('thread', id);
      const { limit, order, after, before } = pageRequestOf({ ...query, order: query.order ?? 'asc' });
      const seqOf = async (messageId: string | undefined, param: 'after' | 'before') => {
        if (cursorOf(messageId) === undefined) return undefined;
        const seq = await messageSeq(deps.db, id, messageId!);
        if (seq === null) throw new UnknownCursorError(param);
        return seq;
      };
      const page = await threadMessagePage(deps.db, id, {
        limit,
        order,
        afterSeq: await seqOf(after, 'after'),
        beforeSeq: await seqOf(before, 'before'),
      });
      ctx.body = presentList(page, presentThreadMessage);
    }),
  );

  router.delete(
    '/v1/threads/:id',
    audited(deps.db, 'thread.delete', 'thread'),
    requireScope('agents:run'),
    operation('deleteThread', async (ctx, { path: { id } }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const thread = await findThread(tx, projectId, id, { lock: true });
        if (!thread) throw NotFoundError('thread', id);
        const active = await oldestActiveRunOnThread(tx, id);
        if (active) {
          throw ConflictError(
            'thread_busy',
            `The thread ${id} has a run still to end (${active.id}); cancel it, or delete the thread once it has ended.`,
          );
        }
        const copy = await activeExperimentRunOf(tx, projectId, { threadId: id });
        if (copy) {
          throw ConflictError(
            'thread_busy',
            `An experiment's run copied from the thread's runs is still to end (${copy.id}); cancel it or its experiment, or delete the thread once it has ended.`,
          );
        }
        const removed = (await deleteThread(tx, projectId, id))!;
        return { status: 200, body: presentDeletedThread(id, removed) };
      });
      respond(ctx, answer);
    }),
  );
}
