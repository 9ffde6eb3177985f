import type { components } from '../api/generated/openapi.js';
import type {
  FileNodeRecord,
  NodeMatch,
  NodeRecord,
  NodeRelationRecord,
  PassageMatch,
  RelationMatch,
  SourceRecord,
} from '../records/graph-search.js';
import { unixSeconds } from './time.js';

type Schemas = components['schemas'];
type EntityType = Schemas['EntityType'];

export function presentSource(source: SourceRecord): Schemas['GraphSource'] {
  return {
    item_id: source.item_id,
    file_id: source.file_id,
    filename: source.filename,
    page: source.page,
    start_ms: source.start_ms,
    end_ms: source.end_ms,
    start: source.start,
    end: source.end,
    text: source.text,
    extractor: source.extractor,
  };
}

const ref = (node: { id: string; type: string; name: string }): Schemas['GraphNodeRef'] => ({
  id: node.id,
  type: node.type as EntityType,
  name: node.name,
});

export function presentNodeMatch(node: NodeMatch): Schemas['GraphNode'] {
  return {
    id: node.id,
    object: 'graph.node',
    type: node.entity_type as EntityType,
    name: node.name,
    canonical_name: node.canonical_name,
    mentions: node.mentions,
    files: node.files,
    sources: node.sources.map(presentSource),
    created_at: unixSeconds(node.created_at),
  };
}

export function presentRelationMatch(relation: RelationMatch): Schemas['GraphRelation'] {
  return {
    type: relation.relation,
    source: ref(relation.source),
    target: ref(relation.target),
    count: relation.count,
    sources: relation.sources.map(presentSource),
  };
}

export function presentPassage(passage: PassageMatch): Schemas['GraphPassage'] {
  const segment = passage.start_ms !== null;
  return {
    file_id: passage.file_id,
    filename: passage.filename,
    page: segment ? null : passage.page_number,
    start_ms: passage.start_ms,
    end_ms: passage.end_ms,
    snippet: passage.snippet,
  };
}

export function presentNodeDetail(
  node: NodeRecord,
  mentions: SourceRecord[],
  relations: NodeRelationRecord[],
  hasMore: boolean,
): Schemas['GraphNodeDetail'] {
  return {
    id: node.id,
    object: 'graph.node',
    type: node.entity_type as EntityType,
    name: node.name,
    canonical_name: node.canonical_name,
    created_at: unixSeconds(node.created_at),
    mentions: mentions.map(presentSource),
    relations: relations.map((r) => ({ type: r.relation, direction: r.direction, other: ref(r.other), source: presentSource(r.source) })),
    has_more: hasMore,
  };
}

export function presentFileNode(node: FileNodeRecord): Schemas['FileGraphNode'] {
  return {
    id: node.id,
    object: 'file.graph_node',
    type: node.entity_type as EntityType,
    name: node.name,
    canonical_name: node.canonical_name,
    mentions: node.mentions,
    relations: node.relations,
  };
}
