/**
 * Threads: conversations that last. A thread's messages are the input and output of the runs made on it, appended
 * in the transaction that ends each run, so that a thread never holds half a turn; the next run reads them back as
 * its context, newest first as far as its model's window allows (`historyWithin`).
 */
import type { ChatMessage } from '../models/messages.js';
import { newId } from './ids.js';
import { statement, type Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import { recordEvent } from './events.js';
import { forgetThread } from './memories.js';
import { clearConversations } from './run-steps.js';

export interface ThreadRecord {
  id: string;
  project_id: string;
  subject_id: string | null;
  metadata: Record<string, string>;
  message_count: number;
  last_run_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface ThreadMessageRecord {
  id: string;
  thread_id: string;
  seq: number;
  run_id: string | null;
  role: 'user' | 'assistant';
  content: string;
  created_at: Date;
}

/**
 * The most messages a thread takes runs for: a run on a thread that holds as many is refused, and the runs admitted
 * before still add their turns. It bounds what one conversation holds and what deleting it costs the database.
 */
export const THREAD_MESSAGES_MAX = 100_000;

const COLUMNS = 'id, project_id, subject_id, metadata, message_count, last_run_id, created_at, updated_at';
const MESSAGE_COLUMNS = 'id, thread_id, seq, run_id, role, content, created_at';

/**
 * A message's size as the context window counts it: one token per three bytes of its text, and four for its
 * framing. Counted high on purpose: a history that fits by this count fits the model's.
 */
export function messageTokens(content: string): number {
  return Math.ceil(Buffer.byteLength(content) / 3) + 4;
}

export async function createThread(
  tx: Queryable,
  projectId: string,
  fields: { subjectId: string | null; metadata: Record<string, string> },
): Promise<ThreadRecord> {
  const { rows } = await tx.query<ThreadRecord>(
    `INSERT INTO threads (id, project_id, subject_id, metadata) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [newId('thread'), projectId, fields.subjectId, fields.metadata],
  );
  const thread = rows[0]!;
  await recordEvent(tx, projectId, 'thread.created', { object: 'thread', id: thread.id });
  return thread;
}

/** `lock` holds the thread's row until the transaction ends: its runs are admitted one at a time under it. */
export async function findThread(
  db: Queryable,
  projectId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ThreadRecord | null> {
  const { rows } = await db.query<ThreadRecord>(
    `SELECT ${COLUMNS} FROM threads WHERE id = $1 AND project_id = $2${options.lock ? ' FOR UPDATE' : ''}`,
    [id, projectId],
  );
  return rows[0] ?? null;
}

export interface ThreadFilters {
  agentId?: string;
  networkId?: string;
  subjectId?: string;
  metadata?: Record<string, string>;
  createdAfter?: number;
  createdBefore?: number;
  /** Words the thread's messages contain (all of them, in any message). */
  q?: string;
}

export async function listThreads(
  db: Queryable,
  projectId: string,
  page: PageRequest,
  filters: ThreadFilters,
): Promise<Page<ThreadRecord>> {
  const conditions: [string, ...unknown[]][] = [];
  if (filters.createdAfter !== undefined) conditions.push(['created_at >= to_timestamp(?)', filters.createdAfter]);
  if (filters.createdBefore !== undefined) conditions.push(['created_at < to_timestamp(?)', filters.createdBefore]);
  if (filters.metadata && Object.keys(filters.metadata).length > 0)
    conditions.push(['metadata @> ?::jsonb', JSON.stringify(filters.metadata)]);
  if (filters.agentId !== undefined)
    conditions.push(['EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = threads.id AND r.agent_id = ?)', filters.agentId]);
  if (filters.networkId !== undefined)
    conditions.push(['EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = threads.id AND r.network_id = ?)', filters.networkId]);
  // A query of no words (punctuation alone, or nothing) holds no lexeme, which no message matches: it filters nothing.
  // The messages are looked up once, by the project given rather than each thread's: a subquery that named the
  // thread's project was run again for every thread of the project (1,000 threads: 175 ms a search, not 2).
  if (filters.q !== undefined)
    conditions.push([
      `(numnode(plainto_tsquery('simple', ?)) = 0 OR id IN (SELECT m.thread_id FROM thread_messages m WHERE m.project_id = ? AND m.search @@ plainto_tsquery('simple', ?)))`,
      filters.q,
      projectId,
      filters.q,
    ]);
  return selectPage<ThreadRecord>(db, {
    table: 'threads',
    columns: COLUMNS,
    projectId,
    where: { subject_id: filters.subjectId },
    conditions,
    page,
  });
}

/** A thread's messages in order, `limit` at a time after (or before) a place in it. */
export async function threadMessagePage(
  db: Queryable,
  threadId: string,
  page: { limit: number; afterSeq?: number; beforeSeq?: number; order: 'asc' | 'desc' },
): Promise<{ rows: ThreadMessageRecord[]; hasMore: boolean }> {
  const params: unknown[] = [threadId];
  const clauses = ['thread_id = $1'];
  if (page.afterSeq !== undefined) {
    params.push(page.afterSeq);
    clauses.push(`seq ${page.order === 'asc' ? '>' : '<'} $${params.length}`);
  }
  if (page.beforeSeq !== undefined) {
    params.push(page.beforeSeq);
    clauses.push(`seq ${page.order === 'asc' ? '<' : '>'} $${params.length}`);
  }
  // Walking back from `before` runs the opposite way, and the page is turned round afterwards.
  const backwards = page.beforeSeq !== undefined;
  const ascending = (page.order === 'asc') !== backwards;
  params.push(page.limit + 1);
  const { rows } = await db.query<ThreadMessageRecord>(
    `SELECT ${MESSAGE_COLUMNS} FROM thread_messages WHERE ${clauses.join(' AND ')} ORDER BY seq ${ascending ? 'ASC' : 'DESC'} LIMIT $${params.length}`,
    params,
  );
  const page_ = rows.slice(0, page.limit);
  if (backwards) page_.reverse();
  return { rows: page_, hasMore: rows.length > page.limit };
}

/** The place of one of the thread's messages, for a cursor; null when the thread has no such message. */
export async function messageSeq(db: Queryable, threadId: string, messageId: string): Promise<number | null> {
  const { rows } = await db.query<{ seq: number }>('SELECT seq FROM thread_messages WHERE id = $1 AND thread_id = $2', [
    messageId,
    threadId,
  ]);
  return rows[0]?.seq ?? null;
}

/** Messages read at a time, newest first, while the window has room: the first read, and the most of a later one. */
const HISTORY_FIRST_READ = 100;
const HISTORY_LONGEST_READ = 3_200;

/**
 * The thread's history for a run, as the window rule keeps it: the newest turns (each run's messages) whose sizes add
 * up to at most `tokens`, whole, oldest first; and how many older messages that left out. Neither a message nor a
 * turn is cut: one that does not fit whole is left out with everything before it. Run while the run runs: its own
 * turn is not in the thread yet.
 *
 * Read newest first, a page at a time, only until the window is full: what a run costs the database grows with what
 * it is given, not with how long its thread has grown (a thread of a million messages is read as one of a hundred).
 */
export async function historyWithin(
  db: Queryable,
  threadId: string,
  tokens: number,
): Promise<{ messages: ChatMessage[]; omitted: number }> {
  const kept: ChatMessage[] = [];
  // The turn being read (a turn is the messages of one run, in a row): kept once all of it is seen to fit.
  let turn: { id: string; messages: ChatMessage[] } | null = null;
  let used = 0;
  let below = 2 ** 31 - 1;
  let read = HISTORY_FIRST_READ;
  reading: for (;;) {
    const { rows } = await db.query<{ seq: number; role: 'user' | 'assistant'; content: string; tokens: number; turn: string }>(
      `SELECT seq, role, content, tokens, coalesce(run_id, id) AS turn FROM thread_messages
       WHERE thread_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`,
      [threadId, below, read],
    );
    for (const row of rows) {
      if (turn && row.turn !== turn.id) {
        kept.push(...turn.messages);
        turn = null;
      }
      used += row.tokens;
      if (used > tokens) {
        turn = null;
        break reading;
      }
      turn ??= { id: row.turn, messages: [] };
      turn.messages.push({ role: row.role, content: row.content });
    }
    if (rows.length < read) break;
    below = rows.at(-1)!.seq;
    read = Math.min(read * 2, HISTORY_LONGEST_READ);
  }
  if (turn) kept.push(...turn.messages);
  const { rows } = await db.query<{ message_count: number }>('SELECT message_count FROM threads WHERE id = $1', [threadId]);
  const total = rows[0]?.message_count ?? kept.length;
  return { messages: kept.reverse(), omitted: Math.max(0, total - kept.length) };
}

/** The text of a message as a thread keeps it: its text parts, in order (images are not kept). */
function textOf(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .filter((part) => part.type === 'text')
    .map((part) => part.text)
    .join('\n');
}

/**
 * Appends a run's turn to its thread: its input, then its output when it has one. In the transaction that ends the
 * run, so that the thread gets the whole turn or none of it.
 */
export async function appendTurn(
  tx: Queryable,
  run: { id: string; project_id: string; thread_id: string; input: ChatMessage[]; output_text: string },
): Promise<number> {
  const turn = [
    ...run.input.filter((m) => m.role === 'user' || m.role === 'assistant').map((m) => ({ role: m.role, content: textOf(m) })),
    ...(run.output_text ? [{ role: 'assistant' as const, content: run.output_text }] : []),
  ].filter((m) => m.content.length > 0);
  if (turn.length === 0) return 0;
  const updated = await tx.query(
    `UPDATE threads SET message_count = message_count + $2, last_run_id = $3, updated_at = now() WHERE id = $1`,
    [run.thread_id, turn.length, run.id],
  );
  // The thread was deleted while the run ran: the turn has nowhere to go.
  if (updated.rowCount === 0) return 0;
  // After the newest message, read once the thread's row is held (so after any turn appended before): a subject
  // forgotten may have taken messages from the middle of the thread (its turns on a thread not its own), so the
  // count is no longer where the next one goes.
  const { rows } = await tx.query<{ last: number }>('SELECT coalesce(max(seq), 0) AS last FROM thread_messages WHERE thread_id = $1', [
    run.thread_id,
  ]);
  const first = rows[0]!.last + 1;
  await tx.query(
    `INSERT INTO thread_messages (id, thread_id, project_id, seq, run_id, role, content, tokens)
     SELECT id, $1, $2, seq, $3, role, content, tokens
     FROM unnest($4::text[], $5::int[], $6::text[], $7::text[], $8::int[]) AS m(id, seq, role, content, tokens)`,
    [
      run.thread_id,
      run.project_id,
      run.id,
      turn.map(() => newId('msg')),
      turn.map((_, i) => first + i),
      turn.map((m) => m.role),
      turn.map((m) => m.content),
      turn.map((m) => messageTokens(m.content)),
    ],
  );
  await recordEvent(tx, run.project_id, 'thread.updated', { object: 'thread', id: run.thread_id });
  return turn.length;
}

/**
 * The thread's oldest run still to end: while there is one, another run on the thread waits or is refused. Read
 * from the index of the runs still to end, so a thread's ended runs, however many, cost nothing here.
 */
const OLDEST_ACTIVE_RUN_ON_THREAD = statement(
  'oldest_active_run_on_thread',
  `SELECT id, status, network_id IS NOT NULL AS network FROM runs
   WHERE thread_id = $1 AND status IN ('queued', 'in_progress') ORDER BY created_at, id LIMIT 1`,
);

export async function oldestActiveRunOnThread(
  db: Queryable,
  threadId: string,
): Promise<{ id: string; status: 'queued' | 'in_progress'; network: boolean } | null> {
  const { rows } = await db.query<{ id: string; status: 'queued' | 'in_progress'; network: boolean }>(OLDEST_ACTIVE_RUN_ON_THREAD, [
    threadId,
  ]);
  return rows[0] ?? null;
}

/**
 * Whether the thread holds a run ahead of `runId`: one still to end that was created before it. Runs on a thread
 * start in that order (this is what holds them), so one in progress is always ahead of those that wait. One probe
 * of an index, however many runs wait on the thread.
 */
const RUN_AHEAD_ON_THREAD = statement(
  'run_ahead_on_thread',
  `SELECT EXISTS (
     SELECT 1 FROM runs me JOIN runs a ON a.thread_id = me.thread_id
     WHERE me.id = $2 AND a.thread_id = $1 AND a.status IN ('queued', 'in_progress') AND (a.created_at, a.id) < (me.created_at, me.id)
   ) AS ahead`,
);

export async function runAheadOnThread(db: Queryable, threadId: string, runId: string): Promise<boolean> {
  const { rows } = await db.query<{ ahead: boolean }>(RUN_AHEAD_ON_THREAD, [threadId, runId]);
  return rows[0]!.ahead;
}

/** The thread's next run waiting its turn, once none is in progress: null while one is. */
export async function nextRunOnThread(db: Queryable, threadId: string): Promise<{ id: string; network: boolean } | null> {
  const oldest = await oldestActiveRunOnThread(db, threadId);
  // Runs on a thread start in order, so one in progress is its oldest still to end.
  if (!oldest || oldest.status === 'in_progress') return null;
  return { id: oldest.id, network: oldest.network };
}

export interface ThreadDeletion {
  messages: number;
  runs: number;
  /** Memories learned only from the thread. */
  memories: number;
  /** Experiment items copied from its runs, cleared with them. */
  experimentItems: number;
}

/**
 * Deletes a thread and its messages and the memories learned only from it, and clears the conversation its runs hold (their input, output and steps'
 * messages, as retention clears them; a network run's hops too), keeping what they cost. In one transaction, with its event.
 */
export async function deleteThread(tx: Queryable, projectId: string, threadId: string): Promise<ThreadDeletion | null> {
  // What was learned from the thread goes with it: a memory it alone supports is deleted, and the subject's others settled.
  const memories = await forgetThread(tx, projectId, threadId);
  const { rows } = await tx.query<{ message_count: number }>(
    'DELETE FROM threads WHERE id = $1 AND project_id = $2 RETURNING message_count',
    [threadId, projectId],
  );
  if (rows.length === 0) return null;
  const cleared = await clearConversations(tx, projectId, { threadId });
  await recordEvent(tx, projectId, 'thread.deleted', { object: 'thread', id: threadId });
  return { messages: rows[0]!.message_count, runs: cleared.runs, memories, experimentItems: cleared.experimentItems };
}
