/**
 * The graph stage: entities and relations found in a context file's stored pages or transcript segments,
 * each as a graph item whose provenance names the page or time span and the character offsets it came from.
 * In slices of time, a batch of parts at a time, drafted until the last stage commits them with the status.
 */
import type { Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import type { NewGraphItem } from '../../records/graph.js';
import { graphDraftProgress, markGraphFound, storeGraphDraft, type GraphProgress } from '../../records/graph-drafts.js';
import type { FileRecord } from '../../records/files.js';
import { chunksOf, type Passage } from './engines/entities.js';
import { extractEntitiesInThread } from './engines/analysis-thread.js';
import { modelRelations, type GraphModel, type ModelSpending } from './graph-model.js';

/** Pages read and analysed at a time: bounds memory on a long file. */
const BATCH = 25;
/** A file adds at most this many items, so one huge file cannot flood the graph. */
export const MAX_GRAPH_ITEMS_PER_FILE = 50_000;

interface StoredPart {
  page_number: number;
  text: string;
  start_ms: number | null;
  end_ms: number | null;
}

/** A page or segment is read in windows of about this many characters, cut at sentence ends. */
const WINDOW_CHARS = 50_000;
/** Characters analysed in one go (in a thread of their own), between heartbeats. */
const SLICE_CHARS = 200_000;
/** A file's first this many characters are analysed; past them, a huge text file adds no more items. */
export const MAX_GRAPH_CHARACTERS = 20_000_000;

interface Window extends Passage {
  /** Where the window starts in its page's or segment's text: provenance offsets are the page's. */
  offset: number;
}

/** Every graph item of the file, found at once: for a workflow begun before the graph was drafted in slices. */
export async function graphItemsOf(db: Db, file: FileRecord, context: Context, model?: GraphModel): Promise<NewGraphItem[]> {
  const items: NewGraphItem[] = [];
  for await (const batch of graphBatches(db, file, context, model)) items.push(...batch.items);
  return items;
}

/**
 * Drafts the file's graph items a batch of parts at a time, from the last batch drafted on, until every part is
 * read or the file's limits are reached (`done`), or until `until` (milliseconds since the epoch) has passed with
 * parts left (`more`): at least one batch either way, so that every slice moves on.
 */
export async function draftGraph(
  db: Db,
  file: FileRecord,
  context: Context,
  model: GraphModel | undefined,
  until: number,
): Promise<'done' | 'more'> {
  const drafted = await graphDraftProgress(db, file.id);
  if (drafted.found) return 'done';
  for await (const batch of graphBatches(db, file, context, model, drafted.progress ?? undefined)) {
    await storeGraphDraft(db, file.id, batch.progress, batch.items);
    if (Date.now() >= until) return 'more';
  }
  await markGraphFound(db, file.id);
  return 'done';
}

/**
 * The graph items of the file's parts after `from`, a batch of parts at a time, each with the progress through it,
 * until the parts end or the file's limits (characters analysed, items) are reached.
 */
async function* graphBatches(
  db: Db,
  file: FileRecord,
  context: Context,
  model: GraphModel | undefined,
  from: GraphProgress = { after: 0, analysed: 0, items: 0 },
): AsyncGenerator<{ items: NewGraphItem[]; progress: GraphProgress }> {
  let { after, analysed, items: found } = from;
  const spending: ModelSpending = { stopped: false };
  while (found < MAX_GRAPH_ITEMS_PER_FILE && analysed < MAX_GRAPH_CHARACTERS) {
    const { rows } = await db.query<StoredPart>(
      'SELECT page_number, text, start_ms, end_ms FROM file_pages WHERE file_id = $1 AND page_number > $2 ORDER BY page_number LIMIT $3',
      [file.id, after, BATCH],
    );
    if (rows.length === 0) return;
    after = rows.at(-1)!.page_number;
    const items: NewGraphItem[] = [];
    let slice: Window[] = [];
    let sliceChars = 0;
    for (const row of rows) {
      for (const { start, end } of chunksOf(row.text, WINDOW_CHARS)) {
        if (analysed >= MAX_GRAPH_CHARACTERS) break;
        slice.push({
          text: row.text.slice(start, end),
          page: row.start_ms === null ? row.page_number : null,
          start_ms: row.start_ms,
          end_ms: row.end_ms,
          offset: start,
        });
        sliceChars += end - start;
        analysed += end - start;
        if (sliceChars >= SLICE_CHARS) {
          items.push(...(await analyse(slice)));
          [slice, sliceChars] = [[], 0];
        }
      }
    }
    if (slice.length > 0) items.push(...(await analyse(slice)));
    context.heartbeat({ graphPagesRead: after });
    const kept = items.slice(0, MAX_GRAPH_ITEMS_PER_FILE - found);
    found += kept.length;
    yield { items: kept, progress: { after, analysed, items: found } };
  }

  async function analyse(windows: Window[]): Promise<NewGraphItem[]> {
    const items: NewGraphItem[] = [];
    const { mentions, relations: offline } = await extractEntitiesInThread(windows);
    const read = model ? await modelRelations(db, file.id, file.project_id, model, windows, mentions, context, spending) : [];
    const relations = [...offline, ...read.map((r) => ({ ...r, extractor: `model:${model!.id}` }))];
    const where = (window: number, start: number, end: number, text: string, extractor: string) => {
      const { page, start_ms, end_ms, offset } = windows[window]!;
      return { page, start_ms, end_ms, start: offset + start, end: offset + end, text, extractor };
    };
    for (const m of mentions) {
      items.push({
        kind: 'entity',
        node: { type: m.type, canonical: m.canonical, name: m.name },
        provenance: where(m.passage, m.start, m.end, m.name, m.extractor),
      });
    }
    for (const r of relations) {
      const source = mentions[r.source]!;
      const target = mentions[r.target]!;
      items.push({
        kind: 'relation',
        relation: r.type,
        source: { type: source.type, canonical: source.canonical },
        target: { type: target.type, canonical: target.canonical },
        provenance: where(r.passage, r.start, r.end, windows[r.passage]!.text.slice(r.start, r.end), r.extractor),
      });
    }
    return items;
  }
}
