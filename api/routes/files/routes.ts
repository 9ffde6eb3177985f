import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited } from '../../middleware/audit.js';
import { validateQuery } from '../../validation.js';
import { NotFoundError } from '../../errors.js';
import { pageRequestOf, presentList } from '../../pagination.js';
import { fingerprintOf, createOnce } from '../../idempotency.js';
import { deleteFile, findFile, insertFile, listFiles, newFileId, type FilePurpose } from '../../../records/files.js';
import { cancelBlobDeletion } from '../../../records/blob-deletions.js';
import { cancelExtraction, startExtraction } from '../../../workflows/extraction-client.js';
import { discardUpload, receiveUpload } from './upload.js';
import { presentFile } from './present.js';

const EXTRACTION_START_DEADLINE_MS = 2_000;

export function fileRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post('/v1/files', audited(deps.db, 'file.create', 'file'), requireScope('files:write'), async (ctx) => {
    const { projectId } = callerOf(ctx);
    const id = newFileId();
    const blobKey = `files/${projectId}/${id}`;
    const upload = await receiveUpload(ctx, deps, blobKey);
    const fingerprint = fingerprintOf(upload.sha256, upload.filename, upload.purpose, upload.metadata);
    const { created, replayed } = await createOnce(ctx, deps, fingerprint, async (tx) => {
      const file = await insertFile(tx, { id, projectId, blobKey, ...upload });
      await cancelBlobDeletion(tx, blobKey);
      return { status: 200, body: presentFile(file) };
    }).catch(async (err) => {
      await discardUpload(deps, blobKey);
      throw err;
    });
    if (replayed) {
      // The earlier request stored these bytes already.
      await discardUpload(deps, blobKey);
    } else {
      // Bounded: with Temporal unreachable the client would retry for many seconds; the record is
      // committed, so the worker's reconciler starts the extraction once Temporal answers.
      await deps.temporal.withDeadline(Date.now() + EXTRACTION_START_DEADLINE_MS, () => startExtraction(deps.temporal, id)).catch((err) =>
        ctx.state.log.warn({ err, file_id: id }, 'extraction start failed; the worker reconciler will start it'),
      );
    }
    ctx.state.auditTargetId = (created.body as { id: string }).id;
    ctx.status = created.status;
    ctx.body = created.body;
  });

  router.get('/v1/files', requireScope('files:read'), validateQuery('listFiles'), async (ctx) => {
    const page = await listFiles(deps.db, callerOf(ctx).projectId, pageRequestOf(ctx), ctx.state.query?.purpose as FilePurpose | undefined);
    ctx.body = presentList(page, presentFile);
  });

  router.get('/v1/files/:id', requireScope('files:read'), async (ctx) => {
    const file = await findFile(deps.db, callerOf(ctx).projectId, ctx.params.id!);
    if (!file) throw NotFoundError('file', ctx.params.id!);
    ctx.body = presentFile(file);
  });

  router.delete('/v1/files/:id', audited(deps.db, 'file.delete', 'file'), requireScope('files:write'), async (ctx) => {
    const id = ctx.params.id!;
    const removed = await deleteFile(deps.db, callerOf(ctx).projectId, id);
    if (!removed) throw NotFoundError('file', id);
    // The deletion is committed; the blob's removal is scheduled in it, so these are best-effort now.
    await cancelExtraction(deps.temporal, id).catch((err) => ctx.state.log.warn({ err, file_id: id }, 'could not cancel extraction'));
    await deps.blobs.delete(removed.blobKey).then(
      () => cancelBlobDeletion(deps.db, removed.blobKey),
      (err) => ctx.state.log.warn({ err, file_id: id }, 'blob removal deferred to the worker sweep'),
    );
    ctx.body = { id, object: 'file', deleted: true, graph_items_removed: removed.graphItemsRemoved };
  });
}
