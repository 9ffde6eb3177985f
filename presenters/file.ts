import type { components } from '../api/generated/openapi.js';
import type { FileRecord } from '../records/files.js';
import { unixSeconds } from './time.js';

export type FileObject = components['schemas']['File'];

export function presentFile(file: FileRecord): FileObject {
  return {
    id: file.id,
    object: 'file',
    filename: file.filename,
    bytes: file.bytes,
    purpose: file.purpose,
    status: file.status,
    mime_type: file.mime_type,
    extracted: { pages: file.pages, tables: file.tables, graph_items: file.graph_items },
    metadata: file.metadata,
    last_error: file.last_error,
    created_at: unixSeconds(file.created_at),
    processed_at: unixSeconds(file.processed_at),
  };
}

export function presentDeletedFile(id: string, graphItemsRemoved: number): components['schemas']['DeletedFile'] {
  return { id, object: 'file', deleted: true, graph_items_removed: graphItemsRemoved };
}
