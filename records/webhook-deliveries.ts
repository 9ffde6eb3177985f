/**
 * The delivery side of webhooks: turning recorded events into deliveries (the outbox read once), claiming
 * deliveries for their first attempt, which deliveries still need their retries' workflow started, each
 * attempt's log row (one whose worker died mid-way too), and a delivery's ending, which counts towards
 * disabling an endpoint that keeps failing.
 */
import { newId } from './ids.js';
import { transaction, type Db, type Queryable } from './db.js';
import { recordEvent, type EventRecord } from './events.js';
import { appendAuditEntry } from './audit-logs.js';
import type { WebhookEndpointRecord } from './webhooks.js';

/** Channel notified when an event or a delivery is recorded (a trigger, migration 010). */
export const WEBHOOKS_CHANNEL = 'agentplane_webhooks';

/**
 * Takes up to `limit` events not yet dispatched, makes one delivery per enabled endpoint subscribed to the
 * event's type (registered by the time the event was recorded), and marks the events dispatched, in one
 * transaction. Concurrent dispatchers skip each other's events; the first delivery per event and
 * endpoint is unique, so nothing is sent twice. Answers how many events it took.
 */
export async function dispatchEvents(db: Db, limit: number): Promise<number> {
  return transaction(db, async (tx) => {
    const { rows: events } = await tx.query<{ id: string }>(
      'SELECT id FROM events WHERE delivered_at IS NULL ORDER BY created_at, id LIMIT $1 FOR UPDATE SKIP LOCKED',
      [limit],
    );
    if (events.length === 0) return 0;
    const ids = events.map((e) => e.id);
    const { rows: targets } = await tx.query<{ event_id: string; endpoint_id: string; project_id: string }>(
      `SELECT e.id AS event_id, w.id AS endpoint_id, e.project_id FROM events e
       JOIN webhook_endpoints w ON w.project_id = e.project_id AND w.status = 'enabled' AND w.created_at <= e.created_at
        AND agentplane_endpoint_takes(w.event_types, e.type)
       WHERE e.id = ANY($1::text[]) ORDER BY e.created_at, e.id`,
      [ids],
    );
    if (targets.length > 0) {
      await tx.query(
        `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) ON CONFLICT DO NOTHING`,
        [
          targets.map(() => newId('whd')),
          targets.map((t) => t.project_id),
          targets.map((t) => t.endpoint_id),
          targets.map((t) => t.event_id),
        ],
      );
    }
    await tx.query('UPDATE events SET delivered_at = now() WHERE id = ANY($1::text[])', [ids]);
    return events.length;
  });
}

/**
 * A dispatcher holds a delivery this long for its first attempt (at most 15 s) and the attempt's log row;
 * past it, the dispatcher is taken for dead and another makes the attempt.
 */
const FIRST_ATTEMPT_CLAIM = '30 seconds';

/**
 * Claims up to `limit` deliveries not yet attempted, oldest first, and of one project at most its room:
 * `roomOf` for the projects named there, `room` for any other. What each attempt needs comes with it: its
 * delivery, endpoint and event. Concurrent dispatchers skip each other's claims.
 */
export async function claimFirstAttempts(
  db: Queryable,
  limit: number,
  room: number,
  roomOf: Map<string, number>,
): Promise<DeliveryTarget[]> {
  // Projects are weighed among the oldest few times `limit` deliveries waiting, not among all of them.
  const { rows } = await db.query<TargetRow>(
    `WITH oldest AS (
       SELECT id, project_id, created_at FROM webhook_deliveries
       WHERE started_at IS NULL AND attempts = 0 AND status = 'pending' AND (claimed_until IS NULL OR claimed_until < now())
       ORDER BY created_at, id LIMIT $1 * 4
     ), ranked AS (
       SELECT o.id, o.created_at, row_number() OVER (PARTITION BY o.project_id ORDER BY o.created_at, o.id) AS nth,
         coalesce(r.room, $2) AS room
       FROM oldest o LEFT JOIN unnest($3::text[], $4::int[]) AS r(project_id, room) ON r.project_id = o.project_id
     ), claimable AS (
       -- The ids as one array: joined instead, the planner may rank them again for every row it locks.
       SELECT d.id FROM webhook_deliveries d
       WHERE d.id = ANY(ARRAY(SELECT id FROM ranked WHERE nth <= room ORDER BY created_at, id LIMIT $1))
         AND d.started_at IS NULL AND (d.claimed_until IS NULL OR d.claimed_until < now())
       FOR UPDATE SKIP LOCKED
     )
     UPDATE webhook_deliveries d SET claimed_until = now() + interval '${FIRST_ATTEMPT_CLAIM}'
     FROM claimable c, webhook_endpoints w, events e
     WHERE d.id = c.id AND w.id = d.endpoint_id AND e.id = d.event_id
     RETURNING json_build_object('id', d.id, 'status', d.status, 'attempts', d.attempts) AS delivery, to_jsonb(w) AS endpoint, to_jsonb(e) AS event`,
    [limit, room, [...roomOf.keys()], [...roomOf.values()]],
  );
  return rows.map(targetOf);
}

/** Gives back deliveries a stopping dispatcher claimed and did not attempt to the end: the next pass of any takes them. */
export async function releaseClaims(db: Queryable, ids: string[]): Promise<void> {
  await db.query(`UPDATE webhook_deliveries SET claimed_until = NULL WHERE id = ANY($1::text[]) AND attempts = 0 AND status = 'pending'`, [
    ids,
  ]);
}

/** Pending deliveries whose retries' workflow was started, oldest first. */
export async function retriesStarted(db: Queryable): Promise<{ id: string }[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM webhook_deliveries WHERE status = 'pending' AND started_at IS NOT NULL ORDER BY created_at, id`,
  );
  return rows;
}

/** A pending delivery whose retries' workflow is gone: `unstartedRetries` lists it again, for the dispatcher. */
export async function forgetRetriesStarted(db: Queryable, deliveryId: string): Promise<void> {
  await db.query(`UPDATE webhook_deliveries SET started_at = NULL WHERE id = $1 AND status = 'pending'`, [deliveryId]);
}

/** Deliveries that failed their first attempt and whose retries' workflow has not been started yet, oldest first. */
export async function unstartedRetries(db: Queryable, limit: number): Promise<{ id: string; projectId: string; attempts: number }[]> {
  const { rows } = await db.query<{ id: string; projectId: string; attempts: number }>(
    `SELECT id, project_id AS "projectId", attempts FROM webhook_deliveries WHERE started_at IS NULL AND attempts > 0 AND status = 'pending'
     ORDER BY created_at, id LIMIT $1`,
    [limit],
  );
  return rows;
}

export async function markDeliveriesStarted(db: Queryable, ids: string[]): Promise<void> {
  await db.query('UPDATE webhook_deliveries SET started_at = now() WHERE id = ANY($1::text[]) AND started_at IS NULL', [ids]);
}

/** What an attempt needs: the delivery, its endpoint and its event; null once the endpoint is gone. */
export interface DeliveryTarget {
  /** `attempts`: the attempts made and logged, the last of them numbered so. */
  delivery: { id: string; status: string; attempts: number };
  endpoint: WebhookEndpointRecord;
  event: EventRecord;
}

interface TargetRow {
  delivery: DeliveryTarget['delivery'];
  endpoint: WebhookEndpointRecord;
  event: EventRecord;
}

function targetOf(row: TargetRow): DeliveryTarget {
  const dated = <T>(value: T, keys: (keyof T)[]) => {
    for (const key of keys) if (value[key] !== null) (value as Record<keyof T, unknown>)[key] = new Date(value[key] as string);
    return value;
  };
  return {
    delivery: row.delivery,
    endpoint: dated(row.endpoint, ['created_at', 'updated_at', 'previous_secret_expires_at']),
    event: dated(row.event, ['created_at', 'delivered_at']),
  };
}

export async function deliveryTarget(db: Queryable, deliveryId: string): Promise<DeliveryTarget | null> {
  const { rows } = await db.query<TargetRow>(
    `SELECT json_build_object('id', d.id, 'status', d.status, 'attempts', d.attempts) AS delivery, to_jsonb(w) AS endpoint, to_jsonb(e) AS event
     FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id JOIN events e ON e.id = d.event_id WHERE d.id = $1`,
    [deliveryId],
  );
  return rows[0] ? targetOf(rows[0]) : null;
}

export interface AttemptOutcome {
  attempt: number;
  responseStatus: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * Logs an attempt (once per attempt number); a delivered one also ends the delivery and the endpoint's run of failures.
 * False when the delivery is gone (its endpoint deleted), with nothing logged.
 */
export async function recordAttempt(db: Queryable, deliveryId: string, outcome: AttemptOutcome, delivered: boolean): Promise<boolean> {
  // One statement: the delivery's row is locked by its update until the attempt's row is written, so no
  // deletion of its endpoint comes between, and a delivery already gone logs nothing.
  const { rows } = await db.query<{ found: number }>(
    `WITH delivery AS (
       UPDATE webhook_deliveries SET
         attempts = CASE WHEN status = 'pending' THEN GREATEST(attempts, $2) ELSE attempts END,
         status = CASE WHEN $3 AND status = 'pending' THEN 'succeeded' ELSE status END,
         completed_at = CASE WHEN $3 AND status = 'pending' THEN now() ELSE completed_at END,
         started_at = CASE WHEN $3 THEN coalesce(started_at, now()) ELSE started_at END
       WHERE id = $1 RETURNING id, endpoint_id
     ), logged AS (
       INSERT INTO webhook_delivery_attempts (delivery_id, attempt, response_status, error, duration_ms)
       SELECT id, $2, $4, $5, $6 FROM delivery
       ON CONFLICT (delivery_id, attempt) DO UPDATE SET response_status = EXCLUDED.response_status, error = EXCLUDED.error,
         duration_ms = EXCLUDED.duration_ms, created_at = now()
     ), endpoint AS (
       UPDATE webhook_endpoints SET consecutive_failures = 0
       WHERE $3 AND id = (SELECT endpoint_id FROM delivery) AND consecutive_failures <> 0
     )
     SELECT count(*)::int AS found FROM delivery`,
    [deliveryId, outcome.attempt, delivered, outcome.responseStatus, outcome.error?.slice(0, 500) ?? null, outcome.durationMs],
  );
  return rows[0]!.found > 0;
}

/**
 * Logs an attempt that never ended (its worker died while the receiver had it), unless its outcome was logged:
 * no answer, `error` saying why, and how long it ran until it was given up. Nothing for a delivery that has
 * ended or is gone.
 */
export async function recordAbandonedAttempt(
  db: Queryable,
  deliveryId: string,
  abandoned: { attempt: number; error: string; durationMs: number },
): Promise<void> {
  await db.query(
    `WITH delivery AS (
       UPDATE webhook_deliveries SET attempts = GREATEST(attempts, $2) WHERE id = $1 AND status = 'pending' RETURNING id
     )
     INSERT INTO webhook_delivery_attempts (delivery_id, attempt, response_status, error, duration_ms)
     SELECT id, $2, NULL, $3, $4 FROM delivery
     ON CONFLICT (delivery_id, attempt) DO NOTHING`,
    [deliveryId, abandoned.attempt, abandoned.error, abandoned.durationMs],
  );
}

/**
 * Ends a delivery that used up its attempts (or whose endpoint stopped taking deliveries) as failed, once.
 * An enabled endpoint counts it; at `disableAfter` failed deliveries in a row it is disabled, with its
 * `webhook_endpoint.disabled` event and an audit entry, in the same transaction. True if this disabled it.
 */
export async function failDelivery(db: Db, deliveryId: string, disableAfter: number): Promise<boolean> {
  return transaction(db, async (tx) => {
    const { rows } = await tx.query<{ endpoint_id: string }>(
      `UPDATE webhook_deliveries SET status = 'failed', completed_at = now() WHERE id = $1 AND status = 'pending' RETURNING endpoint_id`,
      [deliveryId],
    );
    if (!rows[0]) return false;
    const { rows: endpoints } = await tx.query<{ project_id: string; status: string }>(
      `UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1,
         status = CASE WHEN consecutive_failures + 1 >= $2 THEN 'disabled' ELSE status END,
         disabled_reason = CASE WHEN consecutive_failures + 1 >= $2 THEN 'failing' ELSE disabled_reason END,
         updated_at = now()
       WHERE id = $1 AND status = 'enabled' RETURNING project_id, status`,
      [rows[0].endpoint_id, disableAfter],
    );
    const endpoint = endpoints[0];
    if (endpoint?.status !== 'disabled') return false;
    await recordEvent(tx, endpoint.project_id, 'webhook_endpoint.disabled', { object: 'webhook_endpoint', id: rows[0].endpoint_id });
    await appendAuditEntry(tx, {
      projectId: endpoint.project_id,
      apiKeyId: null,
      action: 'webhook_endpoint.disable',
      targetType: 'webhook_endpoint',
      targetId: rows[0].endpoint_id,
      status: 200,
      errorCode: 'webhook_failing',
      // No request: the delivery whose failure disabled it stands in for one.
      requestId: deliveryId,
    });
    return true;
  });
}
