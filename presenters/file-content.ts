import type { components } from '../api/generated/openapi.js';
import type { ContentPartRecord, TableRecord } from '../records/file-content.js';

type Schemas = components['schemas'];

/** A part's id is its cursor: `page-N` for a page, `segment-N` for a transcript segment. */
export function partId(part: Pick<ContentPartRecord, 'page_number' | 'start_ms'>): string {
  return `${part.start_ms === null ? 'page' : 'segment'}-${part.page_number}`;
}

export function presentContentPart(part: ContentPartRecord): Schemas['FileContentPart'] {
  const segment = part.start_ms !== null;
  return {
    id: partId(part),
    object: 'file.content',
    page: segment ? null : part.page_number,
    start_ms: part.start_ms,
    end_ms: part.end_ms,
    text: part.text,
    source: part.source,
    confidence: part.confidence === null ? null : Math.round(part.confidence * 10) / 10,
  };
}

export function presentTable(table: TableRecord): Schemas['FileTable'] {
  return {
    id: table.id,
    object: 'file.table',
    page: table.page,
    box: table.box,
    rows: table.row_count,
    columns: table.column_count,
    detection: table.detection,
    truncated: table.truncated,
    cells: table.cells,
  };
}
