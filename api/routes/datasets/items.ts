/**
 * /v1/datasets/{id}/items: a dataset's cases. Items are added in batches, all or nothing; one taken from a run
 * (`from_run_id`) copies that run's input, attachments and tool calls, read under a hold on the run so that
 * forgetting its conversation at the same time either sees the item and deletes it, or is seen.
 */
import Router from '@koa/router';
import type { ApiDeps, ApiState, Caller } from '../../context.js';
import { callerOf } from '../../context.js';
import { hasScope, requireAnyScope, requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation, type Input } from '../../validation.js';
import { ConflictError, InvalidRequestError, NotFoundError, PermissionError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { createOnce } from '../../idempotency.js';
import { checkAttachments, inputMessagesOf } from '../runs/admission.js';
import type { Queryable } from '../../../records/db.js';
import { findRun, isFinished } from '../../../records/runs.js';
import {
  addItems,
  deleteItem,
  findDataset,
  findItem,
  holdSourceRuns,
  listItems,
  snapshotOfRun,
  type NewDatasetItem,
} from '../../../records/datasets.js';
import { presentDatasetItem, presentDatasetItemWithToolCalls, presentDeletedDatasetItem } from '../../../presenters/dataset.js';
import { presentList } from '../../../presenters/list.js';
import { READ_SCOPES } from './datasets.js';

/** The most an item's `expected` may take, as JSON text. */
export const MAX_EXPECTED_BYTES = 65_536;

type ItemRequest = Input<'addDatasetItems'>['body']['items'][number];

/** What an item's request says, checked on its own; a run to copy is read later, in the transaction. */
function itemOf(request: ItemRequest, param: string): NewDatasetItem & { fromRunId?: string } {
  if ((request.input === undefined) === (request.from_run_id === undefined)) {
    throw InvalidRequestError('invalid_item', `Give \`input\` or \`from_run_id\` for \`${param}\`, not both and not neither.`, param);
  }
  if (request.from_run_id !== undefined && request.file_ids !== undefined) {
    throw InvalidRequestError(
      'invalid_item',
      "An item taken from a run has that run's attachments; give no `file_ids`.",
      `${param}.file_ids`,
    );
  }
  const bytes = request.expected === undefined ? 0 : Buffer.byteLength(JSON.stringify(request.expected));
  if (bytes > MAX_EXPECTED_BYTES) {
    throw InvalidRequestError(
      'expected_too_large',
      `\`expected\` is ${bytes} bytes as JSON, more than the ${MAX_EXPECTED_BYTES} allowed.`,
      `${param}.expected`,
    );
  }
  return {
    input: request.input === undefined ? [] : inputMessagesOf(request.input, `${param}.input`),
    fileIds: request.file_ids ?? [],
    expected: request.expected,
    metadata: request.metadata ?? {},
    fromRunId: request.from_run_id,
  };
}

/** Copies the run an item names into it: 404 for no such run of the project, 409 while it runs or once it is cleared. */
async function withSnapshot(
  tx: Queryable,
  projectId: string,
  item: NewDatasetItem & { fromRunId?: string },
  param: string,
): Promise<NewDatasetItem> {
  const { fromRunId, ...rest } = item;
  if (fromRunId === undefined) return rest;
  const run = await findRun(tx, projectId, fromRunId);
  if (!run) throw NotFoundError('run', fromRunId, `${param}.from_run_id`);
  if (!isFinished(run.status)) {
    throw ConflictError('run_active', `Run ${run.id} has not ended yet; take it into the dataset once it has.`, `${param}.from_run_id`);
  }
  const snapshot = await snapshotOfRun(tx, run);
  if (!snapshot) {
    throw ConflictError(
      'run_cleared',
      `The conversation of run ${run.id} is no longer kept (its retention ended, or its thread or subject was forgotten), so it cannot be taken into a dataset.`,
      `${param}.from_run_id`,
    );
  }
  return { ...rest, input: snapshot.input, fileIds: snapshot.fileIds, sourceRunId: run.id, toolCalls: snapshot.toolCalls };
}

/** Copying a run reads its conversation; attaching files reads them: each needs its read scope besides. */
async function checkReach(deps: ApiDeps, caller: Caller, items: ItemRequest[]): Promise<void> {
  if (items.some((item) => item.from_run_id !== undefined) && !hasScope(caller, 'agents:read')) throw PermissionError('agents:read');
  const fileIds = [...new Set(items.flatMap((item) => item.file_ids ?? []))];
  await checkAttachments(deps.db, caller, fileIds, (fileId) => {
    const i = items.findIndex((item) => item.file_ids?.includes(fileId));
    return `items.${i}.file_ids.${items[i]!.file_ids!.indexOf(fileId)}`;
  });
}

export function datasetItemRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/datasets/:id/items',
    audited(deps.db, 'dataset_item.create', 'dataset'),
    requireScope('datasets:write'),
    operation('addDatasetItems', async (ctx, { path: { id }, body }) => {
      const caller = callerOf(ctx);
      const items = body.items.map((item, n) => itemOf(item, `items.${n}`));
      await checkReach(deps, caller, body.items);
      const { created } = await createOnce(ctx, deps, body, async (tx) => {
        // The runs first, then the dataset: the order clearing a conversation takes them in.
        await holdSourceRuns(
          tx,
          caller.projectId,
          items.flatMap((item) => (item.fromRunId ? [item.fromRunId] : [])),
        );
        const complete: NewDatasetItem[] = [];
        for (const [n, item] of items.entries()) complete.push(await withSnapshot(tx, caller.projectId, item, `items.${n}`));
        const dataset = await findDataset(tx, caller.projectId, id, { lock: true });
        if (!dataset) throw NotFoundError('dataset', id);
        const added = await addItems(tx, dataset, complete);
        // The dataset is the target of the audit entry; the list is what the caller reads.
        return { status: 201, body: { id, ...presentList({ rows: added, hasMore: false }, presentDatasetItemWithToolCalls) } };
      });
      const { id: _target, ...list } = created.body as { id: string };
      ctx.state.auditTargetId = id;
      ctx.status = created.status;
      ctx.body = list;
    }),
  );

  router.get(
    '/v1/datasets/:id/items',
    requireAnyScope(...READ_SCOPES),
    operation('listDatasetItems', async (ctx, { path: { id }, query }) => {
      const { projectId } = callerOf(ctx);
      if (!(await findDataset(deps.db, projectId, id))) throw NotFoundError('dataset', id);
      const page = await listItems(deps.db, projectId, id, pageRequestOf(query));
      ctx.body = presentList(page, (item) => presentDatasetItem(item));
    }),
  );

  router.get(
    '/v1/datasets/:id/items/:item_id',
    requireAnyScope(...READ_SCOPES),
    operation('getDatasetItem', async (ctx, { path: { id, item_id: itemId } }) => {
      const item = await findItem(deps.db, callerOf(ctx).projectId, id, itemId);
      if (!item) throw NotFoundError('dataset item', itemId, 'item_id');
      ctx.body = presentDatasetItemWithToolCalls(item);
    }),
  );

  router.delete(
    '/v1/datasets/:id/items/:item_id',
    audited(deps.db, 'dataset_item.delete', 'dataset_item'),
    requireScope('datasets:write'),
    operation('deleteDatasetItem', async (ctx, { path: { id, item_id: itemId } }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        if (!(await findDataset(tx, projectId, id, { lock: true }))) throw NotFoundError('dataset', id);
        if (!(await deleteItem(tx, projectId, id, itemId))) throw NotFoundError('dataset item', itemId, 'item_id');
        return { status: 200, body: presentDeletedDatasetItem(itemId) };
      });
      respond(ctx, answer);
    }),
  );
}
