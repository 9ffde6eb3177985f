import type { components } from '../api/generated/openapi.js';
import type { ApiKeyRecord } from '../records/api-keys.js';
import type { ConsoleSessionRecord } from '../records/console-sessions.js';
import { unixSeconds } from './time.js';

export type SessionObject = components['schemas']['Session'];

/** A console session as the console sees it: who it acts as, and its CSRF token; never the key's secret. */
export function presentSession(session: ConsoleSessionRecord, key: ApiKeyRecord, csrfToken: string): SessionObject {
  return {
    object: 'session',
    id: session.id,
    project_id: session.project_id,
    api_key_id: key.id,
    api_key_name: key.name,
    scopes: key.scopes,
    csrf_token: csrfToken,
    created_at: unixSeconds(session.created_at),
    expires_at: unixSeconds(session.expires_at),
  };
}
