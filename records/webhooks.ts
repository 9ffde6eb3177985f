/**
 * Webhook endpoints and their deliveries. An endpoint keeps its signing secret (delivery signs with it)
 * and, for a grace period after a rotation, the previous one. A delivery is one event sent to one
 * endpoint, by one workflow; each of its attempts is logged.
 */
import { randomBytes } from 'node:crypto';
import { newId } from './ids.js';
import type { Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';

export interface WebhookEndpointRecord {
  id: string;
  project_id: string;
  url: string;
  event_types: string[];
  description: string | null;
  metadata: Record<string, string>;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  status: 'enabled' | 'disabled';
  disabled_reason: 'requested' | 'failing' | null;
  consecutive_failures: number;
  created_at: Date;
  updated_at: Date;
}

export interface DeliveryAttemptRecord {
  attempt: number;
  created_at: Date;
  response_status: number | null;
  error: string | null;
  duration_ms: number;
}

export interface WebhookDeliveryRecord {
  id: string;
  project_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  redelivery_of: string | null;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: DeliveryAttemptRecord[];
  created_at: Date;
  completed_at: Date | null;
}

const ENDPOINT_COLUMNS =
  'id, project_id, url, event_types, description, metadata, secret, previous_secret, previous_secret_expires_at, status, disabled_reason, consecutive_failures, created_at, updated_at';

/** Standard Webhooks' secret format: `whsec_` and the base64 of the key's bytes (32 here). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export interface NewEndpoint {
  projectId: string;
  url: string;
  eventTypes: string[];
  description?: string | null;
  metadata?: Record<string, string>;
}

export async function insertEndpoint(tx: Queryable, endpoint: NewEndpoint): Promise<{ record: WebhookEndpointRecord; secret: string }> {
  const secret = newSigningSecret();
  const { rows } = await tx.query<WebhookEndpointRecord>(
    `INSERT INTO webhook_endpoints (id, project_id, url, event_types, description, metadata, secret)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${ENDPOINT_COLUMNS}`,
    [newId('whk'), endpoint.projectId, endpoint.url, endpoint.eventTypes, endpoint.description ?? null, endpoint.metadata ?? {}, secret],
  );
  return { record: rows[0]!, secret };
}

/** How many endpoints a project may have. */
export const MAX_ENDPOINTS_PER_PROJECT = 50;

export async function countEndpoints(db: Queryable, projectId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE project_id = $1', [projectId]);
  return rows[0]!.n;
}

export async function findEndpoint(
  db: Queryable,
  projectId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<WebhookEndpointRecord | null> {
  const { rows } = await db.query<WebhookEndpointRecord>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND project_id = $2${options.lock ? ' FOR UPDATE' : ''}`,
    [id, projectId],
  );
  return rows[0] ?? null;
}

export async function listEndpoints(db: Queryable, projectId: string, page: PageRequest): Promise<Page<WebhookEndpointRecord>> {
  return selectPage<WebhookEndpointRecord>(db, { table: 'webhook_endpoints', columns: ENDPOINT_COLUMNS, projectId, page });
}

export interface EndpointChanges {
  url?: string;
  eventTypes?: string[];
  description?: string | null;
  metadata?: Record<string, string>;
  /** Enabling starts the failure count afresh; disabling on request says so. */
  status?: 'enabled' | 'disabled';
}

export async function updateEndpoint(
  tx: Queryable,
  projectId: string,
  id: string,
  changes: EndpointChanges,
): Promise<WebhookEndpointRecord | null> {
  const sets: string[] = [];
  const values: unknown[] = [id, projectId];
  const set = (column: string, value: unknown) => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (changes.url !== undefined) set('url', changes.url);
  if (changes.eventTypes !== undefined) set('event_types', changes.eventTypes);
  if (changes.description !== undefined) set('description', changes.description);
  if (changes.metadata !== undefined) set('metadata', changes.metadata);
  if (changes.status === 'enabled') sets.push(`status = 'enabled'`, 'disabled_reason = NULL', 'consecutive_failures = 0');
  // Disabling what is already disabled keeps the reason it was disabled for.
  if (changes.status === 'disabled')
    sets.push(`disabled_reason = CASE WHEN status = 'enabled' THEN 'requested' ELSE disabled_reason END`, `status = 'disabled'`);
  sets.push('updated_at = now()');
  const { rows } = await tx.query<WebhookEndpointRecord>(
    `UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE id = $1 AND project_id = $2 RETURNING ${ENDPOINT_COLUMNS}`,
    values,
  );
  return rows[0] ?? null;
}

/** Deletes the endpoint with its deliveries and their attempts; a delivery in flight finds it gone and stops. */
export async function deleteEndpoint(tx: Queryable, projectId: string, id: string): Promise<boolean> {
  // Whatever ends a delivery (recordAttempt, failDelivery) locks its row, then its endpoint's; the deletion's cascade
  // would take them the other way round, and the two deadlock. Its deliveries are locked first, in one order.
  await tx.query('SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 AND project_id = $2 ORDER BY id FOR UPDATE', [id, projectId]);
  const { rowCount } = await tx.query('DELETE FROM webhook_endpoints WHERE id = $1 AND project_id = $2', [id, projectId]);
  return rowCount === 1;
}

/** A new secret; the current one keeps signing beside it for `graceSeconds`. */
export async function rotateSecret(
  tx: Queryable,
  projectId: string,
  id: string,
  graceSeconds: number,
): Promise<{ record: WebhookEndpointRecord; secret: string } | null> {
  const secret = newSigningSecret();
  const { rows } = await tx.query<WebhookEndpointRecord>(
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = now() + make_interval(secs => $3), secret = $4, updated_at = now()
     WHERE id = $1 AND project_id = $2 RETURNING ${ENDPOINT_COLUMNS}`,
    [id, projectId, graceSeconds, secret],
  );
  return rows[0] ? { record: rows[0], secret } : null;
}

/** The secrets a delivery made now is signed with: the current one, and the previous one during its grace period. */
export function signingSecretsOf(endpoint: WebhookEndpointRecord, now = new Date()): string[] {
  const previous =
    endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > now
      ? [endpoint.previous_secret]
      : [];
  return [endpoint.secret, ...previous];
}

const DELIVERY_COLUMNS = `d.id, d.project_id, d.endpoint_id, d.event_id, e.type AS event_type, d.redelivery_of, d.status, d.created_at, d.completed_at,
  COALESCE((SELECT json_agg(json_build_object('attempt', a.attempt, 'created_at', a.created_at, 'response_status', a.response_status, 'error', a.error, 'duration_ms', a.duration_ms) ORDER BY a.attempt)
            FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id), '[]') AS attempts`;
const DELIVERY_FROM = 'webhook_deliveries d JOIN events e ON e.id = d.event_id';

function withDates(row: WebhookDeliveryRecord): WebhookDeliveryRecord {
  // json_agg carries timestamps as text.
  return { ...row, attempts: row.attempts.map((a) => ({ ...a, created_at: new Date(a.created_at) })) };
}

export async function listDeliveries(
  db: Queryable,
  projectId: string,
  endpointId: string,
  page: PageRequest,
): Promise<Page<WebhookDeliveryRecord>> {
  const found = await selectPage<WebhookDeliveryRecord>(db, {
    table: 'webhook_deliveries',
    from: DELIVERY_FROM,
    alias: 'd',
    columns: DELIVERY_COLUMNS,
    projectId,
    where: { endpoint_id: endpointId },
    page,
  });
  return { ...found, rows: found.rows.map(withDates) };
}

export async function findDelivery(
  db: Queryable,
  projectId: string,
  endpointId: string,
  id: string,
): Promise<WebhookDeliveryRecord | null> {
  const { rows } = await db.query<WebhookDeliveryRecord>(
    `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM} WHERE d.id = $1 AND d.project_id = $2 AND d.endpoint_id = $3`,
    [id, projectId, endpointId],
  );
  return rows[0] ? withDates(rows[0]) : null;
}

/**
 * Redeliveries of the delivery's event to its endpoint in the last hour, and the seconds until the oldest of
 * them leaves that hour. Read under the endpoint's lock, so two requests at once count each other.
 */
export async function recentRedeliveries(
  tx: Queryable,
  of: WebhookDeliveryRecord,
): Promise<{ count: number; oldestLeavesInSeconds: number }> {
  const { rows } = await tx.query<{ count: number; leaves: number }>(
    `SELECT count(*)::int AS count,
            coalesce(ceil(extract(epoch FROM min(created_at) + interval '1 hour' - now())), 0)::int AS leaves
     FROM webhook_deliveries
     WHERE endpoint_id = $1 AND event_id = $2 AND redelivery_of IS NOT NULL AND created_at > now() - interval '1 hour'`,
    [of.endpoint_id, of.event_id],
  );
  return { count: rows[0]!.count, oldestLeavesInSeconds: rows[0]!.leaves };
}

/** A new delivery of the same event to the same endpoint; the dispatcher starts its workflow. */
export async function insertRedelivery(tx: Queryable, of: WebhookDeliveryRecord): Promise<string> {
  const id = newId('whd');
  await tx.query('INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, redelivery_of) VALUES ($1, $2, $3, $4, $5)', [
    id,
    of.project_id,
    of.endpoint_id,
    of.event_id,
    of.id,
  ]);
  return id;
}
