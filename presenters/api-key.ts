import type { components } from '../api/generated/openapi.js';
import type { ApiKeyRecord } from '../records/api-keys.js';
import { unixSeconds } from './time.js';

export type ApiKeyObject = components['schemas']['ApiKey'];
export type ApiKeyWithSecretObject = components['schemas']['ApiKeyWithSecret'];

export function presentApiKey(key: ApiKeyRecord): ApiKeyObject {
  return {
    id: key.id,
    object: 'api_key',
    name: key.name,
    project_id: key.project_id,
    scopes: key.scopes,
    prefix: key.prefix,
    created_at: unixSeconds(key.created_at),
    revoked_at: unixSeconds(key.revoked_at),
    rate_limits: { requests_per_minute: key.requests_per_minute, concurrent_runs: key.concurrent_runs },
  };
}

/** The creating response alone carries the secret: it is shown once. */
export function presentApiKeyWithSecret(key: ApiKeyRecord, secret: string): ApiKeyWithSecretObject {
  return { ...presentApiKey(key), key: secret };
}

export function presentRevokedApiKey(id: string): components['schemas']['DeletedApiKey'] {
  return { id, object: 'api_key', deleted: true };
}
