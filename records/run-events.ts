/**
 * The run-event log: append-only and totally ordered per run. Taking the next sequence number locks the
 * run's row, so concurrent writers (parallel tool calls) still append in one order, and the NOTIFY sent
 * at commit tells listening API processes to read what is new. Its payload is the run's id and the
 * event's type (`run_… run.completed`), so that who waits only for a run's end wakes only then.
 */
import { statement, type Queryable } from './db.js';

export const RUN_EVENTS_CHANNEL = 'agentplane_run_events';

/** A notification's run id and event type; a payload of a run id alone (an older writer's) leaves the type unknown. */
export function notifiedEvent(payload: string): { runId: string; type: string | null } {
  const space = payload.indexOf(' ');
  return space < 0 ? { runId: payload, type: null } : { runId: payload.slice(0, space), type: payload.slice(space + 1) };
}

export interface RunEventRecord {
  run_id: string;
  seq: number;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

const APPEND_RUN_EVENT = statement(
  'append_run_event',
  `WITH next AS (UPDATE runs SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq, parent_run_id),
       appended AS (INSERT INTO run_events (run_id, seq, type, data) SELECT $1, event_seq, $2, $3 FROM next RETURNING seq)
     SELECT appended.seq, next.parent_run_id, pg_notify($4, $1 || ' ' || $2) FROM appended, next`,
);

/**
 * Appends an event to a run's log. A hop's events are appended to its network run's log too, tagged with
 * `child_run_id`, so one stream follows the whole network.
 */
export async function appendRunEvent(tx: Queryable, runId: string, type: string, data: Record<string, unknown>): Promise<number> {
  // One statement, so that even outside a transaction the event and its notification are one: a write
  // reported failed (the database going down) has written nothing, and is safe to make again. The
  // notification names the event's type too, so that who waits only for a run's end wakes only then.
  const { rows } = await tx.query<{ seq: number; parent_run_id: string | null }>(APPEND_RUN_EVENT, [runId, type, data, RUN_EVENTS_CHANNEL]);
  // A hop's events are the network run's too, tagged with the hop's run.
  const parent = rows[0]!.parent_run_id;
  if (parent) await appendRunEvent(tx, parent, type, { ...data, child_run_id: runId });
  return rows[0]!.seq;
}

// What one read of a log holds at most (the first event always, however large): a tool's result logged
// in an event can be 1 MiB, and a reader sends one read before it takes the next.
const READ_BYTES = 4 * 1024 * 1024;

/**
 * The events after `afterSeq`, in order: up to `limit` of them, and fewer once they pass READ_BYTES. A tool
 * step's `step.completed` carries the tool's result, read from the step (a hop's step for a network run's
 * log), where it is stored once.
 */
export async function runEventsAfter(db: Queryable, runId: string, afterSeq: number, limit = 200): Promise<RunEventRecord[]> {
  const { rows } = await db.query<RunEventRecord>(
    `SELECT run_id, seq, type, data, created_at FROM (
       SELECT *, sum(size) OVER (ORDER BY seq) - size AS before FROM (
         SELECT e.run_id, e.seq, e.type, e.created_at,
                CASE WHEN s.message IS NULL THEN e.data ELSE e.data || jsonb_build_object('output', s.message->'content') END AS data,
                octet_length(e.data::text) + coalesce(octet_length(s.message->>'content'), 0) AS size
         FROM run_events e
         LEFT JOIN run_steps s
           ON e.type = 'step.completed' AND e.data->>'step_type' = 'tool_call' AND NOT e.data ? 'output'
          AND s.run_id = coalesce(e.data->>'child_run_id', e.run_id) AND s.index = (e.data->>'step')::int
         -- A run's events are written once it is: the days before it are not read.
         WHERE e.run_id = $1 AND e.seq > $2 AND e.created_at >= (SELECT created_at FROM runs WHERE id = $1)
         ORDER BY e.seq LIMIT $3
       ) next
     ) page WHERE before < $4 ORDER BY seq`,
    [runId, afterSeq, limit, READ_BYTES],
  );
  return rows;
}
