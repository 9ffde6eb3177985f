/** What extraction made of a file: its text, page by page or segment by segment, its tables, and its graph nodes. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { operation } from '../../validation.js';
import { cursorOf } from '../../pagination.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../errors.js';
import { findFile, type FileRecord } from '../../../records/files.js';
import { contentParts, tableExists, tablesOf } from '../../../records/file-content.js';
import { presentContentPart, presentTable } from '../../../presenters/file-content.js';
import { presentList } from '../../../presenters/list.js';
import { fileSupportsNode, nodesOfFile } from '../../../records/graph-search.js';
import { presentFileNode } from '../../../presenters/graph.js';

export function fileContentRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  /** The file, once processed: before that its content is incomplete, and a failed file keeps none. */
  const processedFile = async (projectId: string, id: string): Promise<FileRecord> => {
    const file = await findFile(deps.db, projectId, id);
    if (!file) throw NotFoundError('file', id);
    if (file.status !== 'processed') {
      throw ConflictError('file_not_processed', `The file is ${file.status}; its content is served once it is processed.`, 'id');
    }
    return file;
  };

  router.get(
    '/v1/files/:id/content',
    requireScope('files:read'),
    operation('getFileContent', async (ctx, { path: { id }, query }) => {
      const file = await processedFile(callerOf(ctx).projectId, id);
      const kind = file.mime_type.startsWith('audio/') ? 'segment' : 'page';
      const given = cursorOf(query.after);
      let after = 0;
      if (given !== undefined) {
        const cursor = new RegExp(`^${kind}-([1-9][0-9]{0,8})$`).exec(given);
        if (!cursor)
          throw InvalidRequestError('invalid_cursor', `\`after\` must be the id of a part of this file, such as \`${kind}-1\`.`, 'after');
        after = Number(cursor[1]);
      }
      ctx.body = presentList(await contentParts(deps.db, file.id, after, query.limit), presentContentPart);
    }),
  );

  router.get(
    '/v1/files/:id/tables',
    requireScope('files:read'),
    operation('getFileTables', async (ctx, { path: { id }, query }) => {
      const file = await processedFile(callerOf(ctx).projectId, id);
      const after = cursorOf(query.after);
      if (after !== undefined && !(await tableExists(deps.db, file.id, after))) {
        throw InvalidRequestError('invalid_cursor', 'No table of this file matches the `after` cursor.', 'after');
      }
      ctx.body = presentList(await tablesOf(deps.db, file.id, after, query.limit), presentTable);
    }),
  );

  router.get(
    '/v1/files/:id/nodes',
    requireScope('files:read'),
    operation('listFileNodes', async (ctx, { path: { id }, query }) => {
      const file = await processedFile(callerOf(ctx).projectId, id);
      const after = cursorOf(query.after);
      if (after !== undefined && !(await fileSupportsNode(deps.db, file.id, after))) {
        throw InvalidRequestError('invalid_cursor', 'No graph node of this file matches the `after` cursor.', 'after');
      }
      ctx.body = presentList(await nodesOfFile(deps.db, file.id, after, query.limit), presentFileNode);
    }),
  );
}
