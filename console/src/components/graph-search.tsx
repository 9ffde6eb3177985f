/** Searching the context graph: the query lives in the URL (`/graph?q=…&type=…`), so a search is a link. */
import { Link, useSearchParams } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { useApi } from '../use-api';
import { Async, EmptyState } from './states';
import { SourceFileLink, Snippet, whereIn } from './graph-provenance';
import { formatCount } from '../format';

const TYPES: Schemas['EntityType'][] = ['person', 'organization', 'place', 'date', 'money'];

export function GraphSearch() {
  const [search, setSearch] = useSearchParams();
  const q = (search.get('q') ?? '').trim();
  const typeParam = search.get('type');
  const type = TYPES.find((t) => t === typeParam);

  const result = useApi(
    (signal) =>
      q ? api.GET('/v1/graph/search', { params: { query: { q, type, limit: 20 } }, signal }).then(unwrap) : Promise.resolve(undefined),
    [q, type],
  );

  function submit(event: Event) {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const next = new URLSearchParams();
    const query = (form.elements.namedItem('q') as HTMLInputElement).value.trim();
    const kind = (form.elements.namedItem('type') as HTMLSelectElement).value;
    if (query) next.set('q', query);
    if (kind) next.set('type', kind);
    setSearch(next);
  }

  return (
    <>
      <h1>Graph</h1>
      <form role="search" class="row" onSubmit={submit} aria-label="Search the context graph">
        <div class="field grow">
          <label for="graph-q">Search entities and passages</label>
          <input
            id="graph-q"
            name="q"
            type="search"
            key={q}
            defaultValue={q}
            maxLength={200}
            required
            placeholder="A name, an organisation, a place…"
          />
        </div>
        <div class="field">
          <label for="graph-type">Entity type</label>
          <select id="graph-type" name="type" key={type ?? ''} defaultValue={type ?? ''}>
            <option value="">any</option>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <button type="submit">Search</button>
        </div>
      </form>
      {!q ? (
        <EmptyState title="Search the context graph" path={`/v1/graph/search?q=Acme`}>
          <p>Entities (people, organisations, places, dates, money) and passages come from the project's context files.</p>
        </EmptyState>
      ) : (
        <Async loaded={result} what="the results">
          {(found) => (found ? <Results found={found} /> : null)}
        </Async>
      )}
    </>
  );
}

function Results({ found }: { found: Schemas['GraphSearchResult'] }) {
  const nothing = found.entities.length === 0 && found.passages.length === 0;
  return (
    <div class="results">
      <p class="muted" role="status">
        {plural(found.entities.length, 'entity', 'entities')}, {plural(found.relations.length, 'relation', 'relations')} and{' '}
        {plural(found.passages.length, 'passage', 'passages')} for “{found.query}”.
      </p>
      {nothing && (
        <EmptyState title={`Nothing matches “${found.query}”`} method="POST" path="/v1/files" form={['file=@notes.pdf', 'purpose=context']}>
          <p>The graph holds what the project's context files mention. Upload one that does:</p>
        </EmptyState>
      )}
      {found.entities.length > 0 && (
        <section aria-labelledby="entities-heading">
          <h2 id="entities-heading">Entities</h2>
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col" class="number">
                  Mentions
                </th>
                <th scope="col" class="number">
                  Files
                </th>
                <th scope="col">First mentioned in</th>
              </tr>
            </thead>
            <tbody>
              {found.entities.map((node) => (
                <tr key={node.id}>
                  <th scope="row">
                    <Link href={`/graph/nodes/${encodeURIComponent(node.id)}`}>{node.name}</Link>
                  </th>
                  <td>{node.type}</td>
                  <td class="number">{formatCount(node.mentions)}</td>
                  <td class="number">{formatCount(node.files)}</td>
                  <td>
                    {node.sources[0] ? (
                      <>
                        <SourceFileLink source={node.sources[0]} /> <span class="muted">({whereIn(node.sources[0])})</span>
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      {found.relations.length > 0 && (
        <section aria-labelledby="relations-heading">
          <h2 id="relations-heading">Relations among them</h2>
          <ul class="relations">
            {found.relations.map((r) => (
              <li key={`${r.source.id} ${r.type} ${r.target.id}`}>
                <NodeLink node={r.source} /> <span class="relation">{r.type.replace(/_/g, ' ')}</span> <NodeLink node={r.target} />{' '}
                <span class="muted">
                  ({formatCount(r.count)} {r.count === 1 ? 'statement' : 'statements'})
                </span>
              </li>
            ))}
          </ul>
        </section>
      )}
      {found.passages.length > 0 && (
        <section aria-labelledby="passages-heading">
          <h2 id="passages-heading">Passages</h2>
          <ol class="passages">
            {found.passages.map((p, i) => (
              <li key={i}>
                <p class="passage-source">
                  <SourceFileLink source={p} /> <span class="muted">{whereIn(p)}</span>
                </p>
                <blockquote>
                  <Snippet text={p.snippet} />
                </blockquote>
              </li>
            ))}
          </ol>
        </section>
      )}
    </div>
  );
}

const plural = (n: number, one: string, many: string) => `${formatCount(n)} ${n === 1 ? one : many}`;

/** A node by its name (and its type, in words), linking to its view. */
export function NodeLink({ node }: { node: { id: string; name: string; type: string } }) {
  return (
    <span class="node-link">
      <Link href={`/graph/nodes/${encodeURIComponent(node.id)}`}>{node.name}</Link> <span class="muted type">{node.type}</span>
    </span>
  );
}
