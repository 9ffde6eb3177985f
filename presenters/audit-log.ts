import type { components } from '../api/generated/openapi.js';
import type { AuditLogRecord } from '../records/audit-logs.js';
import { unixSeconds } from './time.js';

export function presentAuditEntry(entry: AuditLogRecord): components['schemas']['AuditLogEntry'] {
  return {
    id: entry.id,
    object: 'audit_log',
    actor: { api_key_id: entry.api_key_id },
    action: entry.action,
    target: { type: entry.target_type, id: entry.target_id },
    outcome: { status: entry.status, error_code: entry.error_code },
    request_id: entry.request_id,
    created_at: unixSeconds(entry.created_at),
  };
}
