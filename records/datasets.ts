/**
 * Datasets and their items: the cases agents are evaluated on. An item taken from a past run (`from_run_id`)
 * keeps a snapshot of that run: its input, its attached files, and every tool call it made with its answer, in
 * order; an experiment in replay mode answers each tool call of its own from that snapshot (`replayAnswer`).
 */
import { configure } from 'safe-stable-stringify';
import type { InputMessage, RunRecord } from './runs.js';
import { newId } from './ids.js';
import type { Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';

export interface DatasetRecord {
  id: string;
  project_id: string;
  name: string;
  description: string;
  metadata: Record<string, string>;
  /** The scorers an experiment on the dataset uses when it names none: each a name, or an object with its `name`. */
  scorers: unknown[];
  item_count: number;
  created_at: Date;
  updated_at: Date;
}

/** One tool call of the run an item was taken from, as it was made and answered. */
export interface ToolCallSnapshot {
  tool: string;
  /** The arguments as the model wrote them (JSON text, which may not parse). */
  arguments: string;
  content: string;
  is_error: boolean;
}

export interface DatasetItemRecord {
  id: string;
  dataset_id: string;
  project_id: string;
  input: InputMessage[];
  file_ids: string[];
  expected: unknown;
  metadata: Record<string, string>;
  source_run_id: string | null;
  tool_calls: ToolCallSnapshot[] | null;
  created_at: Date;
}

export interface NewDatasetItem {
  input: InputMessage[];
  fileIds: string[];
  /** Undefined or null: the item names no expected answer. */
  expected?: unknown;
  metadata: Record<string, string>;
  sourceRunId?: string;
  toolCalls?: ToolCallSnapshot[];
}

const COLUMNS = 'id, project_id, name, description, metadata, scorers, item_count, created_at, updated_at';
const ITEM_COLUMNS = 'id, dataset_id, project_id, input, file_ids, expected, metadata, source_run_id, tool_calls, created_at';

export async function createDataset(
  tx: Queryable,
  projectId: string,
  fields: { name: string; description: string; metadata: Record<string, string>; scorers: unknown[] },
): Promise<DatasetRecord> {
  const { rows } = await tx.query<DatasetRecord>(
    `INSERT INTO datasets (id, project_id, name, description, metadata, scorers) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
    [newId('ds'), projectId, fields.name, fields.description, fields.metadata, JSON.stringify(fields.scorers)],
  );
  return rows[0]!;
}

/** `lock` holds the dataset's row until the transaction ends: items are added and removed under it. */
export async function findDataset(
  db: Queryable,
  projectId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<DatasetRecord | null> {
  const { rows } = await db.query<DatasetRecord>(
    `SELECT ${COLUMNS} FROM datasets WHERE id = $1 AND project_id = $2${options.lock ? ' FOR UPDATE' : ''}`,
    [id, projectId],
  );
  return rows[0] ?? null;
}

export function listDatasets(db: Queryable, projectId: string, page: PageRequest): Promise<Page<DatasetRecord>> {
  return selectPage<DatasetRecord>(db, { table: 'datasets', columns: COLUMNS, projectId, page });
}

/** Deletes the dataset and its items; false when there was none. */
export async function deleteDataset(tx: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await tx.query('DELETE FROM datasets WHERE id = $1 AND project_id = $2', [id, projectId]);
  return (rowCount ?? 0) > 0;
}

/** Adds items to a dataset (whose row the caller holds locked), in order; the dataset's count follows. */
export async function addItems(tx: Queryable, dataset: DatasetRecord, items: NewDatasetItem[]): Promise<DatasetItemRecord[]> {
  if (items.length === 0) return [];
  const ids = items.map(() => newId('dsi'));
  const { rows } = await tx.query<DatasetItemRecord>(
    `INSERT INTO dataset_items (id, dataset_id, project_id, input, file_ids, expected, metadata, source_run_id, tool_calls, created_at)
     SELECT i.id, $1, $2, i.input, i.file_ids, i.expected, i.metadata, i.source_run_id, i.tool_calls,
            clock_timestamp() + (i.n * interval '1 microsecond')
       FROM jsonb_to_recordset($3::jsonb) AS i(id text, n int, input jsonb, file_ids text[], expected jsonb, metadata jsonb, source_run_id text, tool_calls jsonb)
     RETURNING ${ITEM_COLUMNS}`,
    [
      dataset.id,
      dataset.project_id,
      JSON.stringify(
        items.map((item, n) => ({
          id: ids[n],
          n,
          input: item.input,
          file_ids: item.fileIds,
          // JSON null would read back as "no expected answer" anyway; SQL NULL says so.
          expected: item.expected === undefined ? null : item.expected,
          metadata: item.metadata,
          source_run_id: item.sourceRunId ?? null,
          tool_calls: item.toolCalls ?? null,
        })),
      ),
    ],
  );
  await tx.query('UPDATE datasets SET item_count = item_count + $2, updated_at = now() WHERE id = $1', [dataset.id, rows.length]);
  // In the order given (their times differ by microseconds, which a Date does not hold).
  const order = new Map(ids.map((id, n) => [id, n]));
  return rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
}

export async function findItem(db: Queryable, projectId: string, datasetId: string, itemId: string): Promise<DatasetItemRecord | null> {
  const { rows } = await db.query<DatasetItemRecord>(
    `SELECT ${ITEM_COLUMNS} FROM dataset_items WHERE id = $1 AND dataset_id = $2 AND project_id = $3`,
    [itemId, datasetId, projectId],
  );
  return rows[0] ?? null;
}

export function listItems(db: Queryable, projectId: string, datasetId: string, page: PageRequest): Promise<Page<DatasetItemRecord>> {
  return selectPage<DatasetItemRecord>(db, {
    table: 'dataset_items',
    columns: ITEM_COLUMNS,
    projectId,
    where: { dataset_id: datasetId },
    page,
  });
}

/** Every item of a dataset, oldest first: what an experiment runs. */
export async function allItemsOf(db: Queryable, datasetId: string): Promise<DatasetItemRecord[]> {
  const { rows } = await db.query<DatasetItemRecord>(
    `SELECT ${ITEM_COLUMNS} FROM dataset_items WHERE dataset_id = $1 ORDER BY created_at, id`,
    [datasetId],
  );
  return rows;
}

/** Deletes an item of a dataset (whose row the caller holds locked); false when there was none. */
export async function deleteItem(tx: Queryable, projectId: string, datasetId: string, itemId: string): Promise<boolean> {
  const { rowCount } = await tx.query('DELETE FROM dataset_items WHERE id = $1 AND dataset_id = $2 AND project_id = $3', [
    itemId,
    datasetId,
    projectId,
  ]);
  if (!rowCount) return false;
  await tx.query('UPDATE datasets SET item_count = item_count - 1, updated_at = now() WHERE id = $1', [datasetId]);
  return true;
}

/**
 * Holds the runs items are being taken from until the transaction ends. Clearing a conversation holds its runs
 * first (clearConversations): it either waits for the items and deletes them, or has cleared the runs before they
 * are read, and the snapshot finds them cleared.
 */
/**
 * Holds the dataset until the transaction ends, as an experiment's items are copied from it: its deletion, or an
 * item's, waits for the copies, or has been written and is seen. False when the dataset is gone.
 */
export async function holdDataset(tx: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await tx.query('SELECT 1 FROM datasets WHERE id = $1 AND project_id = $2 FOR SHARE', [id, projectId]);
  return rowCount === 1;
}

export async function holdSourceRuns(tx: Queryable, projectId: string, runIds: string[]): Promise<void> {
  await tx.query('SELECT id FROM runs WHERE project_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR SHARE', [projectId, runIds]);
}

/** What an item keeps of a past run: its input and attachments, and its tool calls (a network run's: its hops') in order. */
export interface RunSnapshot {
  input: InputMessage[];
  fileIds: string[];
  toolCalls: ToolCallSnapshot[];
}

/** The run's snapshot; null when its conversation is no longer kept (retention, or a subject forgotten). */
export async function snapshotOfRun(db: Queryable, run: RunRecord): Promise<RunSnapshot | null> {
  if (run.payloads_expired_at) return null;
  const { rows } = await db.query<{ tool: string; arguments: string; content: string; is_error: boolean }>(
    `SELECT s.tool_call->>'name' AS tool, s.tool_call->>'arguments' AS arguments,
            coalesce(s.message->>'content', '') AS content, s.is_error
       FROM run_steps s JOIN runs r ON r.id = s.run_id
      WHERE (r.id = $1 OR r.parent_run_id = $1) AND s.type = 'tool_call' AND s.status = 'completed' AND s.tool_call IS NOT NULL
      ORDER BY s.started_at, r.created_at, s.index`,
    [run.id],
  );
  return { input: run.input as InputMessage[], fileIds: run.file_ids, toolCalls: rows };
}

// Object keys sorted, no insignificant white space: the same value written another way reads the same.
const canonical = configure({ deterministic: true, circularValue: Error });

/** A JSON value as text in its canonical form: how recorded arguments and expected answers are compared. */
export function canonicalJson(value: unknown): string {
  return canonical(value) ?? 'null';
}

/**
 * Arguments as compared in replay: canonical JSON, so that the same call written another way still matches; text
 * that does not parse is compared as written.
 */
export function canonicalArguments(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  return canonicalJson(value);
}

/**
 * The recorded answer to a tool call in replay: the first snapshot call of the same tool with the same arguments not
 * answered yet (`used` holds the indexes already given out). Null when the snapshot has no such call: a replay miss.
 */
export function replayAnswer(
  snapshot: ToolCallSnapshot[],
  call: { name: string; arguments: string },
  used: ReadonlySet<number>,
): { index: number; content: string; is_error: boolean } | null {
  const wanted = canonicalArguments(call.arguments);
  let fallback: { index: number; content: string; is_error: boolean } | null = null;
  for (const [index, recorded] of snapshot.entries()) {
    if (recorded.tool !== call.name || canonicalArguments(recorded.arguments) !== wanted) continue;
    const answer = { index, content: recorded.content, is_error: recorded.is_error };
    if (!used.has(index)) return answer;
    // A call made more often than the source run made it gets the last answer the source got.
    fallback = answer;
  }
  return fallback;
}
