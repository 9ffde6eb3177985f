/** The project's context graph: search it, and read one node with everything that supports it. */
import Router from '@koa/router';
import type { ApiContext, ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { operation, type Input } from '../../validation.js';
import { NotFoundError } from '../../errors.js';
import { embedQuery } from '../../../models/embeddings.js';
import { findNode, matchingNodes, matchingPassages, mentionsOf, relationItemsOf, relationsAmong } from '../../../records/graph-search.js';
import { presentNodeDetail, presentNodeMatch, presentPassage, presentRelationMatch } from '../../../presenters/graph.js';

/** A node's detail lists at most this many mentions and relations. */
const DETAIL_LIMIT = 1000;

export function graphRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/graph/search',
    requireScope('files:read'),
    operation('searchGraph', async (ctx, { query }) => {
      ctx.body = await searchContext(ctx, deps, query);
    }),
  );

  router.get(
    '/v1/graph/nodes/:id',
    requireScope('files:read'),
    operation('getGraphNode', async (ctx, { path: { id } }) => {
      const node = await findNode(deps.db, callerOf(ctx).projectId, id);
      if (!node) throw NotFoundError('graph node', id);
      const [mentions, relations] = await Promise.all([
        mentionsOf(deps.db, id, DETAIL_LIMIT + 1),
        relationItemsOf(deps.db, id, DETAIL_LIMIT + 1),
      ]);
      const hasMore = mentions.length > DETAIL_LIMIT || relations.length > DETAIL_LIMIT;
      ctx.body = presentNodeDetail(node, mentions.slice(0, DETAIL_LIMIT), relations.slice(0, DETAIL_LIMIT), hasMore);
    }),
  );
}

export type GraphSearchQuery = Input<'searchGraph'>['query'];

/** The project's entities, relations and passages matching `q`: what `GET /v1/graph/search` answers. */
export async function searchContext(ctx: ApiContext, deps: ApiDeps, query: GraphSearchQuery) {
  const { projectId } = callerOf(ctx);
  // Ranking by meaning is a refinement: without it, search ranks by words.
  const embedding = await embedQuery(deps.embeddingModelDir, query.q).catch((err) => {
    ctx.state.log.warn({ err }, 'the query could not be embedded; passages are ranked by words alone');
    return undefined;
  });
  const [nodes, passages] = await Promise.all([
    matchingNodes(deps.db, projectId, query.q, query.type, query.limit),
    matchingPassages(deps.db, projectId, query.q, query.limit, embedding),
  ]);
  const relations = await relationsAmong(
    deps.db,
    nodes.map((n) => n.id),
    query.limit,
  );
  return {
    object: 'graph.search_result' as const,
    query: query.q,
    entities: nodes.map(presentNodeMatch),
    relations: relations.map(presentRelationMatch),
    passages: passages.map(presentPassage),
  };
}
