/** Where a graph item was read: its file (a link to the page it is on), page or time span, and characters. */
import type { ComponentChildren } from 'preact';
import { Link } from 'wouter-preact';
import type { Schemas } from '../api';
import { formatOffset } from '../format';

type Source = Schemas['GraphSource'];

/** A link to the file view, at the page the item is on. */
export function SourceFileLink({ source }: { source: Pick<Source, 'file_id' | 'filename' | 'page'> }) {
  const page = source.page && source.page > 1 ? `?page=${source.page}` : '';
  return <Link href={`/files/${encodeURIComponent(source.file_id)}${page}`}>{source.filename}</Link>;
}

/** "page 2" or "0:01.5–0:04.0". */
export function whereIn(source: Pick<Source, 'page' | 'start_ms' | 'end_ms'>): string {
  if (source.page !== null) return `page ${source.page}`;
  if (source.start_ms !== null) return `${formatOffset(source.start_ms)}–${formatOffset(source.end_ms)}`;
  return '—';
}

/** A passage's snippet with the matched words (between « and ») marked. */
export function Snippet({ text }: { text: string }) {
  const parts = text.split(/«([^»]*)»/);
  return <>{parts.map((part, i) => (i % 2 === 1 ? <mark key={i}>{part}</mark> : part))}</>;
}

/** Every supporting item, one row each, with its provenance. */
export function ProvenanceTable({ caption, rows }: { caption: string; rows: { what: ComponentChildren; source: Source }[] }) {
  return (
    <table class="provenance">
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Item</th>
          <th scope="col">File</th>
          <th scope="col">Where</th>
          <th scope="col" class="number">
            Characters
          </th>
          <th scope="col">Text</th>
          <th scope="col">Extractor</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(({ what, source }) => (
          <tr key={source.item_id}>
            <td>{what}</td>
            <td>
              <SourceFileLink source={source} />
            </td>
            <td>{whereIn(source)}</td>
            <td class="number">
              {source.start}–{source.end}
            </td>
            <td class="excerpt">{source.text}</td>
            <td>
              <code>{source.extractor}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
