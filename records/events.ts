/**
 * The outbox: an event is written in the transaction of the change it announces. It names its subject
 * (`{object, id}`); the payload is presented when the event is sent, so it always has the current shape.
 */
import { newId } from './ids.js';
import { currentTraceContext, type StoredTraceContext } from '../tracing/context.js';
import { statement, type Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';

/** Every type of event the platform records; webhook endpoints subscribe to some of them, or to `*`. */
export const EVENT_TYPES = [
  'file.processed',
  'file.failed',
  'file.deleted',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'network_run.completed',
  'network_run.failed',
  'network_run.cancelled',
  'webhook_endpoint.disabled',
  'budget.threshold_reached',
  'approval.requested',
  'approval.resolved',
  'thread.created',
  'thread.updated',
  'thread.deleted',
  'memory.created',
  'memory.superseded',
  'memory.deleted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const isEventType = (type: string): type is EventType => (EVENT_TYPES as readonly string[]).includes(type);

/**
 * How a run's ending is announced, as SQL of the ended row's `network_id` and the status: a network's (parent) run
 * as `network_run.*`, any other run (a hop too, which has no network of its own) as `run.*`.
 */
export const RUN_ENDED_EVENT_TYPE = (networkId: string, status: string) =>
  `CASE WHEN ${networkId} IS NULL THEN 'run.' ELSE 'network_run.' END || ${status}`;

export interface EventSubject {
  object: string;
  id: string;
}

export interface EventRecord {
  id: string;
  project_id: string;
  type: string;
  data: EventSubject;
  created_at: Date;
  delivered_at: Date | null;
  /** Only as a webhook delivery reads it: the trace of what the event tells. */
  trace_context?: StoredTraceContext | null;
}

const INSERT_EVENT = statement(
  'insert_event',
  'INSERT INTO events (id, project_id, type, data, trace_context) VALUES ($1, $2, $3, $4, $5)',
);

export async function recordEvent(tx: Queryable, projectId: string, type: EventType, subject: EventSubject): Promise<string> {
  const id = newId('evt');
  // The trace of what happened (a request, a run): the event's webhook deliveries are spans of it.
  await tx.query(INSERT_EVENT, [id, projectId, type, subject, currentTraceContext()]);
  return id;
}

const COLUMNS = 'id, project_id, type, data, created_at, delivered_at';

export interface EventFilter {
  types?: string[];
  createdAfter?: number;
  createdBefore?: number;
  objectId?: string;
}

export async function listEvents(db: Queryable, projectId: string, page: PageRequest, filter: EventFilter): Promise<Page<EventRecord>> {
  const conditions: [string, ...unknown[]][] = [];
  if (filter.types?.length) conditions.push(['type = ANY(?::text[])', filter.types]);
  if (filter.createdAfter !== undefined) conditions.push(['created_at > to_timestamp(?)', filter.createdAfter]);
  if (filter.createdBefore !== undefined) conditions.push(['created_at < to_timestamp(?)', filter.createdBefore]);
  if (filter.objectId !== undefined) conditions.push([`data->>'id' = ?`, filter.objectId]);
  return selectPage<EventRecord>(db, { table: 'events', columns: COLUMNS, projectId, page, conditions });
}

export async function findEvent(db: Queryable, projectId: string, id: string): Promise<EventRecord | null> {
  const { rows } = await db.query<EventRecord>(`SELECT ${COLUMNS} FROM events WHERE id = $1 AND project_id = $2`, [id, projectId]);
  return rows[0] ?? null;
}

export async function eventsFor(db: Queryable, projectId: string, type: string, objectId: string): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    `SELECT id, project_id, type, data, created_at, delivered_at FROM events
     WHERE project_id = $1 AND type = $2 AND data->>'id' = $3 ORDER BY created_at, id`,
    [projectId, type, objectId],
  );
  return rows;
}
