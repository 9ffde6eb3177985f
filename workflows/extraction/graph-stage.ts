/**
 * The graph stage: entities and relations found in a context file's stored pages or transcript segments,
 * each as a graph item whose provenance names the page or time span and the character offsets it came from.
 */
import type { Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import type { NewGraphItem } from '../../records/graph.js';
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

export async function graphItemsOf(db: Db, file: FileRecord, context: Context, model?: GraphModel): Promise<NewGraphItem[]> {
  const items: NewGraphItem[] = [];
  let after = 0;
  let analysed = 0;
  const spending: ModelSpending = { stopped: false };
  for (;;) {
    const { rows } = await db.query<StoredPart>(
      'SELECT page_number, text, start_ms, end_ms FROM file_pages WHERE file_id = $1 AND page_number > $2 ORDER BY page_number LIMIT $3',
      [file.id, after, BATCH],
    );
    if (rows.length === 0) return items;
    after = rows.at(-1)!.page_number;
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
          await analyse(slice);
          [slice, sliceChars] = [[], 0];
        }
      }
    }
    if (slice.length > 0) await analyse(slice);
    context.heartbeat({ graphPagesRead: after });
    if (items.length >= MAX_GRAPH_ITEMS_PER_FILE) return items.slice(0, MAX_GRAPH_ITEMS_PER_FILE);
    if (analysed >= MAX_GRAPH_CHARACTERS) return items;
  }

  async function analyse(windows: Window[]): Promise<void> {
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
  }
}
