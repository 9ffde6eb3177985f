/** One node of the context graph: what it is, its relations (drawn and listed), and every item supporting it. */
import { Link } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { useApi } from '../use-api';
import { Async } from './states';
import { NodeLink } from './graph-search';
import { ProvenanceTable } from './graph-provenance';
import { NeighbourhoodDrawing, type Neighbour } from './graph-drawing';
import { formatCount, formatTime } from '../format';

type Detail = Schemas['GraphNodeDetail'];
type RelationItem = Detail['relations'][number];

/** One row per distinct relation (type, direction, other node), with how many items state it. */
function distinctRelations(items: RelationItem[]) {
  const byKey = new Map<string, { type: string; direction: RelationItem['direction']; other: RelationItem['other']; count: number }>();
  for (const item of items) {
    const key = `${item.type} ${item.direction} ${item.other.id}`;
    const entry = byKey.get(key);
    if (entry) entry.count++;
    else byKey.set(key, { type: item.type, direction: item.direction, other: item.other, count: 1 });
  }
  return [...byKey.values()];
}

/** The neighbours, best supported first, with the relation names each way. */
function neighboursOf(items: RelationItem[]): Neighbour[] {
  const byId = new Map<string, Neighbour & { support: number }>();
  for (const item of items) {
    const n = byId.get(item.other.id) ?? { ...item.other, outgoing: [], incoming: [], support: 0 };
    n.support++;
    const names = item.direction === 'outgoing' ? n.outgoing : n.incoming;
    const name = item.type.replace(/_/g, ' ');
    if (!names.includes(name)) names.push(name);
    byId.set(item.other.id, n);
  }
  return [...byId.values()].sort((a, b) => b.support - a.support || a.name.localeCompare(b.name));
}

export function GraphNodeView({ id }: { id: string }) {
  const node = useApi((signal) => api.GET('/v1/graph/nodes/{id}', { params: { path: { id } }, signal }).then(unwrap), [id]);
  return (
    <Async loaded={node} what="the node">
      {(n) => <NodeDetail node={n} />}
    </Async>
  );
}

function NodeDetail({ node }: { node: Detail }) {
  const relations = distinctRelations(node.relations);
  const files = new Set([...node.mentions, ...node.relations.map((r) => r.source)].map((s) => s.file_id)).size;
  return (
    <>
      <p class="breadcrumb">
        <Link href="/graph">Graph</Link> / {node.type}
      </p>
      <h1>
        {node.name} <span class="muted type">{node.type}</span>
      </h1>
      <dl class="facts">
        <dt>ID</dt>
        <dd>
          <code class="id">{node.id}</code>
        </dd>
        <dt>Type</dt>
        <dd>{node.type}</dd>
        <dt>Canonical name</dt>
        <dd>{node.canonical_name}</dd>
        <dt>Supported by</dt>
        <dd>
          {formatCount(node.mentions.length)} {node.mentions.length === 1 ? 'mention' : 'mentions'} and {formatCount(node.relations.length)}{' '}
          relation {node.relations.length === 1 ? 'item' : 'items'} in {formatCount(files)} {files === 1 ? 'file' : 'files'}
          {node.has_more && ' (the first 1,000 of each are shown)'}
        </dd>
        <dt>First seen</dt>
        <dd>{formatTime(node.created_at)}</dd>
      </dl>

      <section aria-labelledby="neighbourhood-heading">
        <h2 id="neighbourhood-heading">Neighbourhood</h2>
        {relations.length === 0 ? (
          <p class="muted">No relation links this entity to another.</p>
        ) : (
          <>
            <NeighbourhoodDrawing center={node} neighbours={neighboursOf(node.relations)} />
            <table class="relations-table">
              <caption>Relations</caption>
              <thead>
                <tr>
                  <th scope="col">Relation</th>
                  <th scope="col">Other entity</th>
                  <th scope="col" class="number">
                    Statements
                  </th>
                </tr>
              </thead>
              <tbody>
                {relations.map((r) => (
                  <tr key={`${r.type} ${r.direction} ${r.other.id}`}>
                    <td>
                      {r.direction === 'outgoing' ? (
                        <>
                          {node.name} <strong>{r.type.replace(/_/g, ' ')}</strong> →
                        </>
                      ) : (
                        <>
                          ← <strong>{r.type.replace(/_/g, ' ')}</strong> {node.name}
                        </>
                      )}
                    </td>
                    <td>
                      <NodeLink node={r.other} />
                    </td>
                    <td class="number">{formatCount(r.count)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </section>

      <section aria-labelledby="provenance-heading">
        <h2 id="provenance-heading">Provenance</h2>
        <p class="muted">Every item that supports this entity: where it was read, and by which extractor.</p>
        {node.mentions.length > 0 && (
          <ProvenanceTable caption="Mentions" rows={node.mentions.map((source) => ({ what: 'mention', source }))} />
        )}
        {node.relations.length > 0 && (
          <ProvenanceTable
            caption="Relation statements"
            rows={node.relations.map((r) => ({
              what: (
                <>
                  {r.direction === 'outgoing' ? `${r.type.replace(/_/g, ' ')} →` : `← ${r.type.replace(/_/g, ' ')}`}{' '}
                  <NodeLink node={r.other} />
                </>
              ),
              source: r.source,
            }))}
          />
        )}
      </section>
    </>
  );
}
