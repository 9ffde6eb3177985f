/** The append-only audit log (a trigger refuses UPDATE and DELETE). */
import { newId } from './ids.js';
import { statement, type Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';

export interface AuditLogRecord {
  id: string;
  project_id: string;
  api_key_id: string | null;
  action: string;
  target_type: string;
  target_id: string | null;
  status: number;
  error_code: string | null;
  request_id: string;
  created_at: Date;
}

const COLUMNS = 'id, project_id, api_key_id, action, target_type, target_id, status, error_code, request_id, created_at';

export interface NewAuditEntry {
  projectId: string;
  apiKeyId: string | null;
  action: string;
  targetType: string;
  targetId: string | null;
  status: number;
  errorCode: string | null;
  requestId: string;
}

const INSERT_AUDIT_ENTRY = statement(
  'insert_audit_entry',
  `INSERT INTO audit_logs (id, project_id, api_key_id, action, target_type, target_id, status, error_code, request_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
);

export async function appendAuditEntry(db: Queryable, entry: NewAuditEntry): Promise<void> {
  await db.query(INSERT_AUDIT_ENTRY, [
    newId('audit'),
    entry.projectId,
    entry.apiKeyId,
    entry.action,
    entry.targetType,
    entry.targetId,
    entry.status,
    entry.errorCode,
    entry.requestId,
  ]);
}

export interface AuditFilter {
  targetId?: string;
  action?: string;
  actorApiKeyId?: string;
  /** Unix seconds, exclusive. */
  createdAfter?: number;
  createdBefore?: number;
}

export async function listAuditEntries(
  db: Queryable,
  projectId: string,
  page: PageRequest,
  filter: AuditFilter,
): Promise<Page<AuditLogRecord>> {
  const conditions: [string, ...unknown[]][] = [];
  if (filter.createdAfter !== undefined) conditions.push(['created_at > to_timestamp(?)', filter.createdAfter]);
  if (filter.createdBefore !== undefined) conditions.push(['created_at < to_timestamp(?)', filter.createdBefore]);
  return selectPage<AuditLogRecord>(db, {
    table: 'audit_logs',
    columns: COLUMNS,
    projectId,
    page,
    where: { target_id: filter.targetId, action: filter.action, api_key_id: filter.actorApiKeyId },
    conditions,
  });
}
