import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { createOnce } from '../../idempotency.js';
import { deleteFile, fileBytesHeld, findFile, listFiles, newFileId } from '../../../records/files.js';
import { cancelExtraction } from '../../../workflows/extraction/client.js';
import { presentDeletedFile, presentFile } from '../../../presenters/file.js';
import { presentList } from '../../../presenters/list.js';
import { discardBlob, receiveUpload } from './upload.js';
import { fileStorageOf, recordFile, startFileExtraction, storageFullError } from './store.js';

// With Temporal unreachable, the record is committed all the same (store.ts).
export function fileRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/files',
    audited(deps.db, 'file.create', 'file'),
    requireScope('files:write'),
    operation('uploadFile', async (ctx) => {
      const { projectId } = callerOf(ctx);
      const id = newFileId();
      const blobKey = `files/${projectId}/${id}`;
      // A project whose files already fill what they may hold is refused before the body is read.
      const storage = fileStorageOf(deps);
      const held = await fileBytesHeld(deps.db, projectId);
      if (held >= storage) {
        ctx.set('Connection', 'close');
        throw storageFullError(held, null, storage);
      }
      const upload = await receiveUpload(ctx, deps, blobKey);
      const identity = [upload.sha256, upload.filename, upload.purpose, upload.metadata];
      const { created, replayed } = await createOnce(ctx, deps, identity, async (tx) => {
        const file = await recordFile(tx, { id, projectId, blobKey, ...upload }, storage);
        return { status: 200, body: presentFile(file) };
      }).catch(async (err) => {
        await discardBlob(deps, blobKey);
        throw err;
      });
      if (replayed) {
        // The earlier request stored these bytes already.
        await discardBlob(deps, blobKey);
      } else {
        await startFileExtraction(ctx, deps, id, projectId);
      }
      respond(ctx, created);
    }),
  );

  router.get(
    '/v1/files',
    requireScope('files:read'),
    operation('listFiles', async (ctx, { query }) => {
      ctx.body = presentList(await listFiles(deps.db, callerOf(ctx).projectId, pageRequestOf(query), query.purpose), presentFile);
    }),
  );

  router.get(
    '/v1/files/:id',
    requireScope('files:read'),
    operation('getFile', async (ctx, { path: { id } }) => {
      const file = await findFile(deps.db, callerOf(ctx).projectId, id);
      if (!file) throw NotFoundError('file', id);
      ctx.body = presentFile(file);
    }),
  );

  router.delete(
    '/v1/files/:id',
    audited(deps.db, 'file.delete', 'file'),
    requireScope('files:write'),
    operation('deleteFile', async (ctx, { path: { id } }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const removed = await deleteFile(tx, projectId, id);
        if (!removed) throw NotFoundError('file', id);
        return { status: 200, body: presentDeletedFile(id, removed.graphItemsRemoved), blobKey: removed.blobKey };
      });
      // The deletion is committed with the blob's release; what follows is best-effort and bounded.
      await cancelExtraction(deps.temporal, id).catch((err) => ctx.state.log.warn({ err, file_id: id }, 'could not cancel extraction'));
      await discardBlob(deps, answer.blobKey);
      respond(ctx, { status: answer.status, body: answer.body });
    }),
  );
}
