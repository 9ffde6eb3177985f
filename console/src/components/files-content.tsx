/** What extraction made of a processed file: its pages one at a time, a recording's transcript, its tables, its graph nodes. */
import { useCallback, useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { useApi } from '../use-api';
import { Async, ErrorNotice, Loading } from './states';
import { ExtractedTable } from './files-table';
import { formatCount, formatOffset } from '../format';

type Part = Schemas['FileContentPart'];
type Page<T> = { data: T[]; last_id: string | null; has_more: boolean };

const SOURCE: Record<Part['source'], string> = {
  text_layer: "the PDF's text layer",
  ocr: 'optical character recognition',
  plain_text: 'the text itself',
  transcript: 'speech recognition',
};

/** One page of the file's text; `page` is 1-based and lives in the URL (`?page=3`). */
export function PagesSection({ file, page }: { file: Schemas['File']; page: number }) {
  const pages = file.extracted.pages;
  const shown = Math.min(Math.max(1, page), Math.max(1, pages));
  const part = useApi(
    (signal) =>
      api
        .GET('/v1/files/{id}/content', {
          params: { path: { id: file.id }, query: { limit: 1, after: shown > 1 ? `page-${shown - 1}` : undefined } },
          signal,
        })
        .then(unwrap)
        .then((list) => list.data[0] as Part | undefined),
    [file.id, shown],
  );
  const href = (n: number) => `/files/${encodeURIComponent(file.id)}?page=${n}`;
  return (
    <section aria-labelledby="pages-heading">
      <h2 id="pages-heading">Pages</h2>
      {pages === 0 ? (
        <p class="muted">No text was found in this file.</p>
      ) : (
        <>
          <nav class="paging" aria-label="Pages of the text">
            {shown > 1 ? <Link href={href(shown - 1)}>← Page {shown - 1}</Link> : <span />}
            <span aria-live="polite">
              Page {shown} of {formatCount(pages)}
            </span>
            {shown < pages ? <Link href={href(shown + 1)}>Page {shown + 1} →</Link> : <span />}
          </nav>
          <Async loaded={part} what={`page ${shown}`}>
            {(text) =>
              text ? (
                <article class="page-text" aria-label={`Text of page ${shown}`}>
                  <p class="muted">
                    Read by {SOURCE[text.source]}
                    {text.confidence !== null && ` (mean word confidence ${Math.round(text.confidence)}%)`}.
                  </p>
                  <div class="text-block">{text.text || <span class="muted">This page has no text.</span>}</div>
                </article>
              ) : (
                <p class="muted">This page has no text.</p>
              )
            }
          </Async>
        </>
      )}
    </section>
  );
}

/**
 * A list read page after page: the first page on load, the next ones when asked for. Starts again when
 * `key` changes.
 */
function useLoadMore<T extends { id: string }>(load: (after: string | undefined) => Promise<Page<T>>, key: string) {
  const [items, setItems] = useState<T[]>([]);
  const [next, setNext] = useState<string | null | undefined>(undefined);
  const [error, setError] = useState<Error>();
  const [loading, setLoading] = useState(true);
  const more = useCallback(
    (after: string | undefined) => {
      setLoading(true);
      load(after).then(
        (page) => {
          setItems((all) => (after ? [...all, ...page.data] : page.data));
          setNext(page.has_more ? page.last_id : null);
          setLoading(false);
        },
        (err: Error) => (setError(err), setLoading(false)),
      );
    },
    // Loads again when `key` changes, not each time the caller passes a new `load` function.
    [key],
  );
  useEffect(() => more(undefined), [more]);
  return { items, error, loading, more: next ? () => more(next) : undefined };
}

/** A recording's transcript, segment by segment with its time span. */
export function TranscriptSection({ file }: { file: Schemas['File'] }) {
  const segments = useLoadMore<Part>(
    (after) => api.GET('/v1/files/{id}/content', { params: { path: { id: file.id }, query: { limit: 100, after } } }).then(unwrap),
    file.id,
  );
  return (
    <section aria-labelledby="transcript-heading">
      <h2 id="transcript-heading">Transcript</h2>
      {segments.error && <ErrorNotice error={segments.error} />}
      {segments.items.length === 0 && !segments.loading && !segments.error && (
        <p class="muted">No speech was recognised in this recording.</p>
      )}
      {segments.items.length > 0 && (
        <table class="transcript">
          <caption class="visually-hidden">Transcript segments with their time spans</caption>
          <thead>
            <tr>
              <th scope="col">From</th>
              <th scope="col">To</th>
              <th scope="col">Text</th>
            </tr>
          </thead>
          <tbody>
            {segments.items.map((segment) => (
              <tr key={segment.id} id={segment.id}>
                <td class="number">
                  <time>{formatOffset(segment.start_ms)}</time>
                </td>
                <td class="number">
                  <time>{formatOffset(segment.end_ms)}</time>
                </td>
                <td>{segment.text}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {segments.loading && <Loading what="the transcript" />}
      {segments.more && !segments.loading && (
        <button type="button" class="plain" onClick={segments.more}>
          Show more of the transcript
        </button>
      )}
    </section>
  );
}

/** The file's tables, each as a table. */
export function TablesSection({ file }: { file: Schemas['File'] }) {
  const tables = useLoadMore<Schemas['FileTable']>(
    (after) => api.GET('/v1/files/{id}/tables', { params: { path: { id: file.id }, query: { limit: 20, after } } }).then(unwrap),
    file.id,
  );
  return (
    <section aria-labelledby="tables-heading">
      <h2 id="tables-heading">Tables</h2>
      {tables.error && <ErrorNotice error={tables.error} />}
      {file.extracted.tables === 0 && <p class="muted">No table was found in this file.</p>}
      {tables.items.map((table, i) => (
        <ExtractedTable key={table.id} table={table} index={i + 1} />
      ))}
      {tables.loading && <Loading what="the tables" />}
      {tables.more && !tables.loading && (
        <button type="button" class="plain" onClick={tables.more}>
          Show more tables
        </button>
      )}
    </section>
  );
}

/** How many graph items the file added, and the nodes they support, each a link to its view. */
export function GraphItemsSection({ file }: { file: Schemas['File'] }) {
  const items = file.extracted.graph_items;
  const nodes = useLoadMore<Schemas['FileGraphNode']>(
    (after) => api.GET('/v1/files/{id}/nodes', { params: { path: { id: file.id }, query: { limit: 50, after } } }).then(unwrap),
    file.id,
  );
  return (
    <section aria-labelledby="graph-items-heading">
      <h2 id="graph-items-heading">Graph items</h2>
      {file.purpose === 'attachment' ? (
        <p class="muted">Attachments add nothing to the context graph.</p>
      ) : (
        <p>
          {formatCount(items)} graph {items === 1 ? 'item' : 'items'} (entity mentions and the relations among them) were extracted from
          this file.
        </p>
      )}
      {nodes.error && <ErrorNotice error={nodes.error} />}
      {nodes.items.length > 0 && (
        <table class="file-nodes">
          <caption>Entities this file supports</caption>
          <thead>
            <tr>
              <th scope="col">Entity</th>
              <th scope="col">Type</th>
              <th scope="col" class="number">
                Mentions here
              </th>
              <th scope="col" class="number">
                Relations here
              </th>
            </tr>
          </thead>
          <tbody>
            {nodes.items.map((node) => (
              <tr key={node.id}>
                <th scope="row">
                  <Link href={`/graph/nodes/${encodeURIComponent(node.id)}`}>{node.name}</Link>
                </th>
                <td>{node.type}</td>
                <td class="number">{formatCount(node.mentions)}</td>
                <td class="number">{formatCount(node.relations)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {nodes.loading && <Loading what="the graph nodes" />}
      {nodes.more && !nodes.loading && (
        <button type="button" class="plain" onClick={nodes.more}>
          Show more entities
        </button>
      )}
    </section>
  );
}
