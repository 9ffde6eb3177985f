/**
 * Reading the context graph: names matched by trigram word similarity on the folded (lower-case, unaccented)
 * canonical name, passages by PostgreSQL full-text search, and a node with everything that supports it.
 * Only processed `context` files of the project are searched.
 */
import type { Queryable } from './db.js';
import type { Provenance } from './graph.js';

export interface SourceRecord extends Provenance {
  item_id: string;
  file_id: string;
  filename: string;
}

export interface NodeRecord {
  id: string;
  entity_type: string;
  name: string;
  canonical_name: string;
  created_at: Date;
}

export interface NodeMatch extends NodeRecord {
  mentions: number;
  files: number;
  sources: SourceRecord[];
}

export interface RelationMatch {
  relation: string;
  source: { id: string; type: string; name: string };
  target: { id: string; type: string; name: string };
  count: number;
  sources: SourceRecord[];
}

export interface PassageMatch {
  file_id: string;
  filename: string;
  page_number: number;
  start_ms: number | null;
  end_ms: number | null;
  snippet: string;
}

const SOURCE = `jsonb_build_object('item_id', i.id, 'file_id', i.file_id, 'filename', f.filename) || i.provenance`;

export async function matchingNodes(
  db: Queryable,
  projectId: string,
  query: string,
  type: string | undefined,
  limit: number,
): Promise<NodeMatch[]> {
  const { rows } = await db.query<NodeMatch>(
    `SELECT n.id, n.entity_type, n.name, n.canonical_name, n.created_at,
            (SELECT count(*) FROM graph_items c WHERE c.node_id = n.id)::int AS mentions,
            (SELECT count(DISTINCT c.file_id) FROM graph_items c WHERE c.node_id = n.id)::int AS files,
            (SELECT coalesce(jsonb_agg(s.source), '[]') FROM (
               SELECT ${SOURCE} AS source FROM graph_items i JOIN files f ON f.id = i.file_id
               WHERE i.node_id = n.id ORDER BY i.created_at, i.id LIMIT 5) s) AS sources
     FROM graph_nodes n
     WHERE n.project_id = $1 AND ($4::text IS NULL OR n.entity_type = $4)
       AND (agentplane_fold($2) <% n.canonical_name OR strpos(n.canonical_name, agentplane_fold($2)) > 0)
     ORDER BY word_similarity(agentplane_fold($2), n.canonical_name) DESC, n.canonical_name, n.id
     LIMIT $3`,
    [projectId, query, limit, type ?? null],
  );
  return rows;
}

/** Relations that touch any of the nodes, grouped by type and ends, those stated most often first. */
export async function relationsAmong(db: Queryable, nodeIds: string[], limit: number): Promise<RelationMatch[]> {
  if (nodeIds.length === 0) return [];
  const { rows } = await db.query<RelationMatch>(
    `SELECT g.relation, g.count,
            jsonb_build_object('id', s.id, 'type', s.entity_type, 'name', s.name) AS source,
            jsonb_build_object('id', t.id, 'type', t.entity_type, 'name', t.name) AS target,
            (SELECT coalesce(jsonb_agg(x.source), '[]') FROM (
               SELECT ${SOURCE} AS source FROM graph_items i JOIN files f ON f.id = i.file_id
               WHERE i.kind = 'relation' AND i.relation = g.relation AND i.source_node = g.source_node AND i.target_node = g.target_node
               ORDER BY i.created_at, i.id LIMIT 5) x) AS sources
     FROM (SELECT relation, source_node, target_node, count(*)::int AS count FROM graph_items
           WHERE kind = 'relation' AND (source_node = ANY($1) OR target_node = ANY($1))
           GROUP BY relation, source_node, target_node) g
     JOIN graph_nodes s ON s.id = g.source_node JOIN graph_nodes t ON t.id = g.target_node
     ORDER BY (g.relation = 'co_occurs'), g.count DESC, g.relation, s.id, t.id
     LIMIT $2`,
    [nodeIds, limit],
  );
  return rows;
}

/**
 * Passages of the project's processed context files: by their words (full-text rank) and, given the query's
 * embedding, by meaning (cosine similarity of at least 0.3 to the page's embedding), the two rankings fused
 * (reciprocal rank fusion). A passage that matched the words shows them marked « »; one found by meaning alone
 * shows its beginning.
 */
export async function matchingPassages(
  db: Queryable,
  projectId: string,
  query: string,
  limit: number,
  embedding?: Float32Array,
): Promise<PassageMatch[]> {
  const { rows } = await db.query<PassageMatch>(
    `WITH q AS (SELECT websearch_to_tsquery('english', agentplane_fold($2)) AS query),
     context AS (SELECT p.* FROM file_pages p JOIN files f ON f.id = p.file_id
                 WHERE f.project_id = $1 AND f.purpose = 'context' AND f.status = 'processed'),
     by_words AS (SELECT file_id, page_number, row_number() OVER (ORDER BY ts_rank(search, q.query) DESC, file_id, page_number) AS r
                  FROM context, q WHERE search @@ q.query ORDER BY r LIMIT 50),
     by_meaning AS (SELECT file_id, page_number, row_number() OVER (ORDER BY similarity DESC, file_id, page_number) AS r
                    FROM (SELECT c.file_id, c.page_number, (SELECT sum(a * b) FROM unnest(e.embedding, $4::real[]) AS v(a, b)) AS similarity
                          FROM context c JOIN file_page_embeddings e USING (file_id, page_number) WHERE $4::real[] IS NOT NULL) scored
                    WHERE similarity >= 0.3 ORDER BY r LIMIT 50),
     fused AS (SELECT file_id, page_number, sum(1.0 / (60 + r)) AS score FROM (SELECT * FROM by_words UNION ALL SELECT * FROM by_meaning) ranked
               GROUP BY file_id, page_number)
     SELECT p.file_id, f.filename, p.page_number, p.start_ms, p.end_ms,
            CASE WHEN p.search @@ q.query
                 THEN ts_headline('english', left(p.text, 100000), q.query, 'StartSel=«, StopSel=», MaxWords=40, MinWords=15, MaxFragments=2')
                 ELSE left(regexp_replace(p.text, '\\s+', ' ', 'g'), 300) END AS snippet
     FROM fused JOIN file_pages p USING (file_id, page_number) JOIN files f ON f.id = p.file_id, q
     ORDER BY fused.score DESC, p.file_id, p.page_number
     LIMIT $3`,
    [projectId, query, limit, embedding ? `{${Array.from(embedding, (v) => v.toFixed(6)).join(',')}}` : null],
  );
  return rows;
}

export async function findNode(db: Queryable, projectId: string, id: string): Promise<NodeRecord | null> {
  const { rows } = await db.query<NodeRecord>(
    'SELECT id, entity_type, name, canonical_name, created_at FROM graph_nodes WHERE id = $1 AND project_id = $2',
    [id, projectId],
  );
  return rows[0] ?? null;
}

export async function mentionsOf(db: Queryable, nodeId: string, limit: number): Promise<SourceRecord[]> {
  const { rows } = await db.query<{ source: SourceRecord }>(
    `SELECT ${SOURCE} AS source FROM graph_items i JOIN files f ON f.id = i.file_id
     WHERE i.node_id = $1 ORDER BY f.created_at, i.file_id, (i.provenance->>'page')::int NULLS LAST, (i.provenance->>'start_ms')::int, (i.provenance->>'start')::int, i.id
     LIMIT $2`,
    [nodeId, limit],
  );
  return rows.map((r) => r.source);
}

export interface NodeRelationRecord {
  relation: string;
  direction: 'outgoing' | 'incoming';
  other: { id: string; type: string; name: string };
  source: SourceRecord;
}

export async function relationItemsOf(db: Queryable, nodeId: string, limit: number): Promise<NodeRelationRecord[]> {
  const { rows } = await db.query<NodeRelationRecord>(
    `SELECT i.relation, CASE WHEN i.source_node = $1 THEN 'outgoing' ELSE 'incoming' END AS direction,
            jsonb_build_object('id', o.id, 'type', o.entity_type, 'name', o.name) AS other, ${SOURCE} AS source
     FROM graph_items i JOIN files f ON f.id = i.file_id
     JOIN graph_nodes o ON o.id = CASE WHEN i.source_node = $1 THEN i.target_node ELSE i.source_node END
     WHERE i.kind = 'relation' AND (i.source_node = $1 OR i.target_node = $1)
     ORDER BY (i.relation = 'co_occurs'), i.relation, o.name, i.id
     LIMIT $2`,
    [nodeId, limit],
  );
  return rows;
}

export interface FileNodeRecord extends NodeRecord {
  mentions: number;
  relations: number;
}

/** Each node the file's items touch, with how many of them mention it and how many relate it; `$1` is the file. */
const FILE_NODE_COUNTS = `
  WITH items AS (
    SELECT node_id AS id, 1 AS mention, 0 AS relation FROM graph_items WHERE file_id = $1 AND kind = 'entity'
    UNION ALL SELECT source_node, 0, 1 FROM graph_items WHERE file_id = $1 AND kind = 'relation'
    UNION ALL SELECT target_node, 0, 1 FROM graph_items WHERE file_id = $1 AND kind = 'relation'
  ), counted AS (
    SELECT c.id, sum(c.mention)::int AS mentions, sum(c.relation)::int AS relations, n.entity_type, n.name, n.canonical_name, n.created_at
    FROM items c JOIN graph_nodes n ON n.id = c.id GROUP BY c.id, n.id
  )`;

/** The nodes a file's items support, the most supported first (then by name), a page after the node `after`. */
export async function nodesOfFile(
  db: Queryable,
  fileId: string,
  after: string | undefined,
  limit: number,
): Promise<{ rows: FileNodeRecord[]; hasMore: boolean }> {
  const { rows } = await db.query<FileNodeRecord>(
    `${FILE_NODE_COUNTS}
     SELECT id, entity_type, name, canonical_name, created_at, mentions, relations FROM counted
     WHERE $2::text IS NULL
        OR (-(mentions + relations), canonical_name, id) > (SELECT -(mentions + relations), canonical_name, id FROM counted WHERE id = $2)
     ORDER BY mentions + relations DESC, canonical_name, id
     LIMIT $3`,
    [fileId, after ?? null, limit + 1],
  );
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

export async function fileSupportsNode(db: Queryable, fileId: string, nodeId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'SELECT 1 FROM graph_items WHERE file_id = $1 AND (node_id = $2 OR source_node = $2 OR target_node = $2) LIMIT 1',
    [fileId, nodeId],
  );
  return (rowCount ?? 0) > 0;
}
