/**
 * The context graph. A node is an entity (type + canonical name) shared by the files of a project; a graph
 * item is one file's mention of a node or one relation between two nodes, with its provenance. A node lives
 * exactly as long as some item supports it.
 *
 * Writers lock the nodes they touch in one order (type, canonical name for extraction; id for deletion, which
 * only ever meets nodes that exist), so a file's extraction and another file's deletion that share nodes
 * never deadlock and never leave a node without support or an item without its node.
 */
import type { Queryable } from './db.js';
import { newId } from './ids.js';

export interface NodeKey {
  type: string;
  canonical: string;
}

export interface Provenance {
  /** 1-based page, or null for audio. */
  page: number | null;
  start_ms: number | null;
  end_ms: number | null;
  /** Character offsets in the page's (or segment's) text. */
  start: number;
  end: number;
  /** The text the item was read from: the mention as written, or the sentence that states the relation. */
  text: string;
  extractor: string;
}

export type NewGraphItem =
  | { kind: 'entity'; node: NodeKey & { name: string }; provenance: Provenance }
  | { kind: 'relation'; relation: string; source: NodeKey; target: NodeKey; provenance: Provenance };

const keyOf = (k: NodeKey) => `${k.type}\u0000${k.canonical}`;

/**
 * Writes a file's items and the nodes they need; run it in the transaction that completes the extraction.
 * Returns the number of items written.
 */
export async function writeGraphItems(tx: Queryable, projectId: string, fileId: string, items: NewGraphItem[]): Promise<number> {
  if (items.length === 0) return 0;
  const names = new Map<string, NodeKey & { name: string }>();
  for (const item of items) {
    if (item.kind === 'entity' && !names.has(keyOf(item.node))) names.set(keyOf(item.node), item.node);
  }
  for (const item of items) {
    if (item.kind !== 'relation') continue;
    for (const end of [item.source, item.target]) {
      if (!names.has(keyOf(end))) names.set(keyOf(end), { ...end, name: end.canonical });
    }
  }
  const nodes = [...names.values()].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  // Nodes that exist are locked in id order, the order deletion uses, before any is inserted or updated.
  await tx.query(
    `SELECT n.id FROM graph_nodes n JOIN unnest($2::text[], $3::text[]) AS k(t, c) ON n.entity_type = k.t AND n.canonical_name = k.c
     WHERE n.project_id = $1 ORDER BY n.id FOR UPDATE OF n`,
    [projectId, nodes.map((n) => n.type), nodes.map((n) => n.canonical)],
  );
  // DO UPDATE (not DO NOTHING) takes the row lock and returns the id of a node that already existed.
  const { rows } = await tx.query<{ id: string; entity_type: string; canonical_name: string }>(
    `INSERT INTO graph_nodes (id, project_id, entity_type, canonical_name, name)
     SELECT i, $1, t, c, n FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS x(i, t, c, n, ord) ORDER BY ord
     ON CONFLICT (project_id, entity_type, canonical_name) DO UPDATE SET entity_type = EXCLUDED.entity_type
     RETURNING id, entity_type, canonical_name`,
    [projectId, nodes.map(() => newId('node')), nodes.map((n) => n.type), nodes.map((n) => n.canonical), nodes.map((n) => n.name)],
  );
  const ids = new Map(rows.map((r) => [keyOf({ type: r.entity_type, canonical: r.canonical_name }), r.id]));
  const idOf = (k: NodeKey) => ids.get(keyOf(k))!;
  await tx.query(
    `INSERT INTO graph_items (id, project_id, file_id, kind, node_id, source_node, target_node, relation, provenance)
     SELECT i, $1, $2, k, n, s, t, r, p FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::jsonb[])
       AS x(i, k, n, s, t, r, p)`,
    [
      projectId,
      fileId,
      items.map(() => newId('item')),
      items.map((i) => i.kind),
      items.map((i) => (i.kind === 'entity' ? idOf(i.node) : null)),
      items.map((i) => (i.kind === 'relation' ? idOf(i.source) : null)),
      items.map((i) => (i.kind === 'relation' ? idOf(i.target) : null)),
      items.map((i) => (i.kind === 'relation' ? i.relation : null)),
      items.map((i) => JSON.stringify(i.provenance)),
    ],
  );
  return items.length;
}

/** Removes a file's items and the nodes left without support; run it in the deleting transaction. */
export async function removeGraphItemsOf(tx: Queryable, fileId: string): Promise<number> {
  const items = await tx.query<{ node_id: string | null; source_node: string | null; target_node: string | null }>(
    'DELETE FROM graph_items WHERE file_id = $1 RETURNING node_id, source_node, target_node',
    [fileId],
  );
  const touched = [
    ...new Set(items.rows.flatMap((r) => [r.node_id, r.source_node, r.target_node]).filter((n): n is string => n !== null)),
  ].sort();
  if (touched.length > 0) {
    // Wait for any extraction adding support to these nodes to commit; the check below then sees its items.
    await tx.query('SELECT id FROM graph_nodes WHERE id = ANY($1) ORDER BY id FOR UPDATE', [touched]);
    await tx.query(
      `DELETE FROM graph_nodes n WHERE n.id = ANY($1)
         AND NOT EXISTS (SELECT 1 FROM graph_items i WHERE i.node_id = n.id)
         AND NOT EXISTS (SELECT 1 FROM graph_items i WHERE i.source_node = n.id)
         AND NOT EXISTS (SELECT 1 FROM graph_items i WHERE i.target_node = n.id)`,
      [touched],
    );
  }
  return items.rowCount ?? 0;
}
