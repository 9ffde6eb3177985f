/**
 * The graph stage: entities and relations found in a context file's stored pages or transcript segments,
 * each as a graph item whose provenance names the page or time span and the character offsets it came from.
 */
import type { Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import type { NewGraphItem } from '../../records/graph.js';
import type { FileRecord } from '../../records/files.js';
import { extractEntities, type Passage } from './engines/entities.js';
import { modelRelations, type GraphModel } from './graph-model.js';

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

export async function graphItemsOf(db: Db, file: FileRecord, context: Context, model?: GraphModel): Promise<NewGraphItem[]> {
  const fileId = file.id;
  const items: NewGraphItem[] = [];
  let after = 0;
  for (;;) {
    const { rows } = await db.query<StoredPart>(
      'SELECT page_number, text, start_ms, end_ms FROM file_pages WHERE file_id = $1 AND page_number > $2 ORDER BY page_number LIMIT $3',
      [fileId, after, BATCH],
    );
    if (rows.length === 0) return items;
    after = rows.at(-1)!.page_number;
    const passages: Passage[] = rows.map((r) => ({
      text: r.text,
      page: r.start_ms === null ? r.page_number : null,
      start_ms: r.start_ms,
      end_ms: r.end_ms,
    }));
    const { mentions, relations: offline } = extractEntities(passages);
    const read = model ? await modelRelations(db, fileId, file.project_id, model, passages, mentions, context) : [];
    const relations = [...offline, ...read.map((r) => ({ ...r, extractor: `model:${model!.id}` }))];
    const where = (passage: number, start: number, end: number, text: string, extractor: string) => ({
      page: passages[passage]!.page,
      start_ms: passages[passage]!.start_ms,
      end_ms: passages[passage]!.end_ms,
      start,
      end,
      text,
      extractor,
    });
    for (const m of mentions) {
      items.push({ kind: 'entity', node: { type: m.type, canonical: m.canonical, name: m.name }, provenance: where(m.passage, m.start, m.end, m.name, m.extractor) });
    }
    for (const r of relations) {
      const source = mentions[r.source]!;
      const target = mentions[r.target]!;
      items.push({
        kind: 'relation',
        relation: r.type,
        source: { type: source.type, canonical: source.canonical },
        target: { type: target.type, canonical: target.canonical },
        provenance: where(r.passage, r.start, r.end, passages[r.passage]!.text.slice(r.start, r.end), r.extractor),
      });
    }
    context.heartbeat({ graphPagesRead: after });
    if (items.length >= MAX_GRAPH_ITEMS_PER_FILE) return items.slice(0, MAX_GRAPH_ITEMS_PER_FILE);
  }
}
