import type { components } from '../api/generated/openapi.js';
import type { DatasetItemRecord, DatasetRecord } from '../records/datasets.js';
import { unixSeconds } from './time.js';

type ScorerSpecObject = components['schemas']['ScorerSpecObject'];

export function presentDataset(dataset: DatasetRecord): components['schemas']['Dataset'] {
  return {
    id: dataset.id,
    object: 'dataset',
    name: dataset.name,
    description: dataset.description,
    metadata: dataset.metadata,
    scorers: dataset.scorers as ScorerSpecObject[],
    item_count: dataset.item_count,
    created_at: unixSeconds(dataset.created_at),
    updated_at: unixSeconds(dataset.updated_at),
  };
}

/** An item; its tool calls only when asked for (the item alone, or the items just added): a list stays small. */
export function presentDatasetItem(item: DatasetItemRecord, options: { toolCalls?: boolean } = {}): components['schemas']['DatasetItem'] {
  return {
    id: item.id,
    object: 'dataset.item',
    dataset_id: item.dataset_id,
    // Attachment parts (the model's view of files) are not repeated here: the files are in `file_ids`.
    input: item.input.flatMap((m) => (typeof m.content === 'string' ? [{ role: m.role, content: m.content }] : [])),
    file_ids: item.file_ids,
    expected: item.expected ?? null,
    metadata: item.metadata,
    source_run_id: item.source_run_id,
    tool_call_count: item.tool_calls?.length ?? 0,
    ...(options.toolCalls ? { tool_calls: item.tool_calls } : {}),
    created_at: unixSeconds(item.created_at),
  };
}

export const presentDatasetItemWithToolCalls = (item: DatasetItemRecord) => presentDatasetItem(item, { toolCalls: true });

export function presentDeletedDataset(id: string, itemsRemoved: number): components['schemas']['DeletedDataset'] {
  return { id, object: 'dataset', deleted: true, items_removed: itemsRemoved };
}

export function presentDeletedDatasetItem(id: string): components['schemas']['DeletedDatasetItem'] {
  return { id, object: 'dataset.item', deleted: true };
}
