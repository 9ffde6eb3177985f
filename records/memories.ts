/**
 * Memories: facts learned about a subject, each supported by the spans of the thread messages that stated it. A
 * memory lives exactly as long as one of its sources does, so deleting a thread deletes what was learned only
 * from it and nothing else. Of the memories of one subject and attribute, the one stated last is `current`; the
 * others are `superseded` by it, with the reason, and come back should it go; the 100 stated last are kept.
 */
import { newId } from './ids.js';
import type { Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import { recordEvent } from './events.js';
import { clearConversations } from './run-steps.js';

export interface MemorySource {
  thread_id: string;
  run_id: string;
  message_id: string;
  start: number;
  end: number;
  quote: string;
  learned_at: Date;
}

export interface MemoryRecord {
  id: string;
  project_id: string;
  subject_id: string;
  attribute: string;
  value: string;
  statement: string;
  confidence: number;
  extractor: string;
  status: 'current' | 'superseded';
  superseded_by: string | null;
  superseded_reason: string | null;
  superseded_at: Date | null;
  learned_at: Date;
  created_at: Date;
  /** The newest SOURCES_SHOWN of its sources, newest first. */
  sources: MemorySource[];
  source_count: number;
}

/** A fact as the engine read it from one message of a thread. */
export interface LearnedFact {
  attribute: string;
  value: string;
  valueKey: string;
  statement: string;
  confidence: number;
  extractor: string;
  source: {
    threadId: string;
    runId: string;
    messageId: string;
    messageSeq: number;
    start: number;
    end: number;
    quote: string;
    learnedAt: Date;
  };
}

// The sources a memory shows, newest first: a fact stated in thousands of runs still reads as one small object.
export const SOURCES_SHOWN = 20;

const COLUMNS = `id, project_id, subject_id, attribute, value, statement, confidence, extractor, status, superseded_by, superseded_reason,
  superseded_at, learned_at, created_at,
  (SELECT coalesce(jsonb_agg(jsonb_build_object('thread_id', s.thread_id, 'run_id', s.run_id, 'message_id', s.message_id,
     'start', s.start_offset, 'end', s.end_offset, 'quote', s.quote, 'learned_at', s.learned_at)
     ORDER BY s.learned_at DESC, s.message_seq DESC, s.start_offset DESC), '[]')
   FROM (SELECT * FROM memory_sources s WHERE s.memory_id = memories.id
         ORDER BY s.learned_at DESC, s.message_seq DESC, s.start_offset DESC LIMIT ${SOURCES_SHOWN}) s) AS sources,
  (SELECT count(*)::int FROM memory_sources s WHERE s.memory_id = memories.id) AS source_count`;

/** Sources come back as JSON: their times as text. */
function withDates(record: MemoryRecord): MemoryRecord {
  return { ...record, sources: record.sources.map((s) => ({ ...s, learned_at: new Date(s.learned_at) })) };
}

/**
 * Holds the subjects' memories until the transaction ends (in one order, so that two transactions cannot wait on
 * each other): what is learned about a subject, and what is forgotten of it, are settled one at a time.
 */
async function lockSubjects(tx: Queryable, projectId: string, subjectIds: string[]): Promise<void> {
  for (const subjectId of [...new Set(subjectIds)].sort())
    await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`memories:${projectId}:${subjectId}`]);
}

/**
 * Stores what a run's messages stated about `subjectId`: a new memory per new fact, a further source for a fact
 * already known, then the subject's current memory of each attribute touched chosen again. In the caller's
 * transaction, which holds the thread's row: a thread deleted meanwhile has no messages left to cite, and nothing
 * is stored. Storing the same facts again adds nothing (a worker that dies mid-way runs this again).
 */
export async function learnFacts(
  tx: Queryable,
  projectId: string,
  subjectId: string,
  facts: LearnedFact[],
): Promise<{ created: string[] }> {
  const created: string[] = [];
  const attributes = new Set<string>();
  await lockSubjects(tx, projectId, [subjectId]);
  for (const fact of facts) {
    const { rows } = await tx.query<{ id: string; inserted: boolean }>(
      `INSERT INTO memories (id, project_id, subject_id, attribute, value, value_key, statement, confidence, extractor, learned_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (project_id, subject_id, attribute, value_key) DO UPDATE SET confidence = greatest(memories.confidence, EXCLUDED.confidence)
       RETURNING id, (xmax = 0) AS inserted`,
      [
        newId('mem'),
        projectId,
        subjectId,
        fact.attribute,
        fact.value,
        fact.valueKey,
        fact.statement,
        fact.confidence,
        fact.extractor,
        fact.source.learnedAt,
      ],
    );
    const memory = rows[0]!;
    const source = fact.source;
    const added = await tx.query(
      `INSERT INTO memory_sources (memory_id, project_id, thread_id, run_id, message_id, message_seq, start_offset, end_offset, quote, learned_at)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 WHERE EXISTS (SELECT 1 FROM thread_messages WHERE id = $5)
       ON CONFLICT DO NOTHING`,
      [
        memory.id,
        projectId,
        source.threadId,
        source.runId,
        source.messageId,
        source.messageSeq,
        source.start,
        source.end,
        source.quote,
        source.learnedAt,
      ],
    );
    if (memory.inserted && added.rowCount === 0) {
      // Its message is gone: a memory without a source is not kept.
      await tx.query('DELETE FROM memories WHERE id = $1', [memory.id]);
      continue;
    }
    if (memory.inserted) {
      created.push(memory.id);
      await recordEvent(tx, projectId, 'memory.created', { object: 'memory', id: memory.id });
    }
    attributes.add(fact.attribute);
  }
  // A memory made here and already past what its attribute, or its subject, keeps is not one made.
  const trimmed = new Set(await settle(tx, projectId, subjectId, [...attributes]));
  if (created.length > 0) for (const id of await trimSubject(tx, projectId, subjectId)) trimmed.add(id);
  return { created: created.filter((id) => !trimmed.has(id)) };
}

/**
 * The most memories one subject keeps. Past it, the ones stated longest ago (by their latest source) are deleted,
 * superseded ones first: a subject that states ever more attributes costs its runs' search, and what every project
 * shares, what this many do.
 */
export const MEMORIES_PER_SUBJECT = 10_000;

/**
 * Deletes what the subject keeps past MEMORIES_PER_SUBJECT, with their sources and a `memory.deleted` each; answers
 * the deleted. Superseded memories go first, so a current one goes only once none is left: no attribute is then left
 * with a superseded memory and no current one, and none is to be chosen again.
 */
async function trimSubject(tx: Queryable, projectId: string, subjectId: string): Promise<string[]> {
  const { rows: counted } = await tx.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM (SELECT 1 FROM memories WHERE project_id = $1 AND subject_id = $2 LIMIT $3) kept',
    [projectId, subjectId, MEMORIES_PER_SUBJECT + 1_000],
  );
  const excess = counted[0]!.n - MEMORIES_PER_SUBJECT;
  if (excess <= 0) return [];
  const { rows: deleted } = await tx.query<{ id: string }>(
    `DELETE FROM memories WHERE id IN (
       SELECT m.id FROM memories m
       CROSS JOIN LATERAL (
         SELECT s.learned_at, s.message_seq, s.start_offset FROM memory_sources s WHERE s.memory_id = m.id
         ORDER BY s.learned_at DESC, s.message_seq DESC, s.start_offset DESC LIMIT 1
       ) l
       WHERE m.project_id = $1 AND m.subject_id = $2
       ORDER BY m.status = 'current', l.learned_at, l.message_seq, l.start_offset, m.id
       LIMIT $3)
     RETURNING id`,
    [projectId, subjectId, excess],
  );
  for (const { id } of deleted) await recordEvent(tx, projectId, 'memory.deleted', { object: 'memory', id });
  return deleted.map((row) => row.id);
}

/**
 * What is kept of one subject's memories of one attribute: the current one and the ones stated most recently before
 * it, this many in all. Each new value costs the subject its oldest superseded one past that, so a subject that
 * states a thousand values of one attribute costs each learning what a hundred do, and no more storage.
 */
export const MEMORIES_PER_ATTRIBUTE = 100;

/**
 * Chooses again, for each attribute, which of the subject's memories is current: the one stated last (by its
 * latest source). The others are marked superseded by it, with the reason; one it had superseded that is now the
 * latest (the later statement's thread was deleted) is current again. Past MEMORIES_PER_ATTRIBUTE, the ones stated
 * longest ago are deleted, with their sources. A few statements however many memories change; answers the deleted.
 */
async function settle(tx: Queryable, projectId: string, subjectId: string, attributes: string[]): Promise<string[]> {
  if (attributes.length === 0) return [];
  const { rows } = await tx.query<{
    id: string;
    attribute: string;
    status: string;
    superseded_by: string | null;
    statement: string;
    latest: string;
  }>(
    `SELECT m.id, m.attribute, m.status, m.superseded_by, m.statement, l.message_id AS latest
     FROM memories m
     CROSS JOIN LATERAL (
       SELECT s.message_id, s.learned_at, s.message_seq, s.start_offset FROM memory_sources s WHERE s.memory_id = m.id
       ORDER BY s.learned_at DESC, s.message_seq DESC, s.start_offset DESC LIMIT 1
     ) l
     WHERE m.project_id = $1 AND m.subject_id = $2 AND m.attribute = ANY($3::text[])
     ORDER BY m.attribute, l.learned_at DESC, l.message_seq DESC, l.start_offset DESC, m.id`,
    [projectId, subjectId, attributes],
  );
  const byAttribute = new Map<string, typeof rows>();
  for (const row of rows) byAttribute.set(row.attribute, [...(byAttribute.get(row.attribute) ?? []), row]);
  const current: string[] = [];
  const superseded: { id: string; by: string; reason: string; wasCurrent: boolean }[] = [];
  const excess: string[] = [];
  for (const [, memories] of byAttribute) {
    const [winner, ...older] = memories;
    if (winner!.status !== 'current') current.push(winner!.id);
    const reason = `Contradicted by a later statement, ${JSON.stringify(winner!.statement)} (message ${winner!.latest}).`;
    for (const memory of older.slice(0, MEMORIES_PER_ATTRIBUTE - 1)) {
      if (memory.status === 'superseded' && memory.superseded_by === winner!.id) continue;
      superseded.push({ id: memory.id, by: winner!.id, reason, wasCurrent: memory.status === 'current' });
    }
    excess.push(...older.slice(MEMORIES_PER_ATTRIBUTE - 1).map((memory) => memory.id));
  }
  if (current.length > 0) {
    await tx.query(
      `UPDATE memories SET status = 'current', superseded_by = NULL, superseded_reason = NULL, superseded_at = NULL WHERE id = ANY($1::text[])`,
      [current],
    );
  }
  if (superseded.length > 0) {
    await tx.query(
      `UPDATE memories m SET status = 'superseded', superseded_by = c.by, superseded_reason = c.reason, superseded_at = now()
       FROM unnest($1::text[], $2::text[], $3::text[]) AS c(id, by, reason) WHERE m.id = c.id`,
      [superseded.map((c) => c.id), superseded.map((c) => c.by), superseded.map((c) => c.reason)],
    );
  }
  for (const memory of superseded)
    if (memory.wasCurrent) await recordEvent(tx, projectId, 'memory.superseded', { object: 'memory', id: memory.id });
  if (excess.length === 0) return [];
  // Their sources go with them (ON DELETE CASCADE).
  const { rows: deleted } = await tx.query<{ id: string }>('DELETE FROM memories WHERE id = ANY($1::text[]) RETURNING id', [excess]);
  for (const { id } of deleted) await recordEvent(tx, projectId, 'memory.deleted', { object: 'memory', id });
  return deleted.map((row) => row.id);
}

/** Deletes those of `candidates` left without a source, with their events, and settles what is left. */
async function dropUnsupported(
  tx: Queryable,
  projectId: string,
  candidates: { id: string; subject_id: string; attribute: string }[],
): Promise<number> {
  if (candidates.length === 0) return 0;
  const { rows } = await tx.query<{ id: string; subject_id: string; attribute: string }>(
    `DELETE FROM memories m WHERE m.id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM memory_sources s WHERE s.memory_id = m.id)
     RETURNING id, subject_id, attribute`,
    [candidates.map((c) => c.id)],
  );
  for (const row of rows) await recordEvent(tx, projectId, 'memory.deleted', { object: 'memory', id: row.id });
  const touched = new Map<string, Set<string>>();
  for (const c of candidates) touched.set(c.subject_id, (touched.get(c.subject_id) ?? new Set()).add(c.attribute));
  for (const [subject, attributes] of touched) await settle(tx, projectId, subject, [...attributes]);
  return rows.length;
}

/** Removes a thread's sources, and the memories learned only from it; answers how many memories went. */
export async function forgetThread(tx: Queryable, projectId: string, threadId: string): Promise<number> {
  const subjects = await tx.query<{ subject_id: string }>(
    'SELECT DISTINCT m.subject_id FROM memory_sources s JOIN memories m ON m.id = s.memory_id WHERE s.thread_id = $1 AND s.project_id = $2',
    [threadId, projectId],
  );
  await lockSubjects(
    tx,
    projectId,
    subjects.rows.map((r) => r.subject_id),
  );
  const { rows } = await tx.query<{ id: string; subject_id: string; attribute: string }>(
    `WITH gone AS (DELETE FROM memory_sources WHERE thread_id = $1 AND project_id = $2 RETURNING memory_id)
     SELECT DISTINCT m.id, m.subject_id, m.attribute FROM memories m JOIN gone ON gone.memory_id = m.id`,
    [threadId, projectId],
  );
  return dropUnsupported(tx, projectId, rows);
}

export async function deleteMemory(tx: Queryable, projectId: string, id: string): Promise<boolean> {
  const subject = await tx.query<{ subject_id: string }>('SELECT subject_id FROM memories WHERE id = $1 AND project_id = $2', [
    id,
    projectId,
  ]);
  if (subject.rows.length === 0) return false;
  await lockSubjects(tx, projectId, [subject.rows[0]!.subject_id]);
  const { rows } = await tx.query<{ subject_id: string; attribute: string }>(
    'DELETE FROM memories WHERE id = $1 AND project_id = $2 RETURNING subject_id, attribute',
    [id, projectId],
  );
  if (rows.length === 0) return false;
  await recordEvent(tx, projectId, 'memory.deleted', { object: 'memory', id });
  await settle(tx, projectId, rows[0]!.subject_id, [rows[0]!.attribute]);
  return true;
}

export async function findMemory(db: Queryable, projectId: string, id: string): Promise<MemoryRecord | null> {
  const { rows } = await db.query<MemoryRecord>(`SELECT ${COLUMNS} FROM memories WHERE id = $1 AND project_id = $2`, [id, projectId]);
  return rows[0] ? withDates(rows[0]) : null;
}

export interface MemoryFilters {
  subjectId?: string;
  status?: 'current' | 'superseded';
  threadId?: string;
}

export async function listMemories(
  db: Queryable,
  projectId: string,
  page: PageRequest,
  filters: MemoryFilters,
): Promise<Page<MemoryRecord>> {
  const conditions: [string, ...unknown[]][] = [];
  if (filters.threadId !== undefined)
    conditions.push(['EXISTS (SELECT 1 FROM memory_sources s WHERE s.memory_id = memories.id AND s.thread_id = ?)', filters.threadId]);
  const found = await selectPage<MemoryRecord>(db, {
    table: 'memories',
    columns: COLUMNS,
    projectId,
    where: { subject_id: filters.subjectId, status: filters.status },
    conditions,
    page,
  });
  return { ...found, rows: found.rows.map(withDates) };
}

// The most a run is given: the subject's newest current memories.
export const MEMORIES_IN_CONTEXT = 50;

/**
 * Whether the run's subject is remembered: a run (not a hop) on a thread for a subject, of an agent or network with
 * memory on.
 */
export async function keepsMemories(
  db: Queryable,
  run: {
    thread_id: string | null;
    subject_id: string | null;
    parent_run_id: string | null;
    agent_id: string | null;
    agent_version: number | null;
    network_id: string | null;
    network_version: number | null;
  },
): Promise<boolean> {
  if (!run.thread_id || !run.subject_id || run.parent_run_id) return false;
  const { rows } = await db.query<{ enabled: boolean }>(
    run.network_id
      ? `SELECT (memory->>'enabled')::boolean AS enabled FROM network_versions WHERE network_id = $1 AND version = $2`
      : `SELECT (memory->>'enabled')::boolean AS enabled FROM agent_versions WHERE agent_id = $1 AND version = $2`,
    run.network_id ? [run.network_id, run.network_version] : [run.agent_id, run.agent_version],
  );
  return rows[0]?.enabled === true;
}

/**
 * The subject a run is given memories of, if any: its own (or, for a network's hop, its network run's) subject, when
 * its agent keeps memories, or the hop's network does.
 */
export async function rememberedSubject(
  db: Queryable,
  run: { subject_id: string | null; parent_run_id: string | null },
  agentRemembers: boolean,
): Promise<string | null> {
  if (!run.parent_run_id) return agentRemembers ? run.subject_id : null;
  const { rows } = await db.query<{ subject_id: string | null; enabled: boolean | null }>(
    `SELECT p.subject_id, (v.memory->>'enabled')::boolean AS enabled FROM runs p
     LEFT JOIN network_versions v ON v.network_id = p.network_id AND v.version = p.network_version WHERE p.id = $1`,
    [run.parent_run_id],
  );
  const parent = rows[0];
  return parent && (agentRemembers || parent.enabled === true) ? parent.subject_id : null;
}

/** The subject's current memories, newest first, for a run's context. */
export async function currentMemories(
  db: Queryable,
  projectId: string,
  subjectId: string,
  limit = MEMORIES_IN_CONTEXT,
): Promise<MemoryRecord[]> {
  const { rows } = await db.query<MemoryRecord>(
    `SELECT ${COLUMNS} FROM memories WHERE project_id = $1 AND subject_id = $2 AND status = 'current' ORDER BY learned_at DESC, id LIMIT $3`,
    [projectId, subjectId, limit],
  );
  return rows.map(withDates);
}

/** The subject's memories (current first) matching any word of `query`, best first. */
export async function searchMemories(
  db: Queryable,
  projectId: string,
  subjectId: string,
  query: string,
  limit: number,
): Promise<MemoryRecord[]> {
  const words = (query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 32);
  if (words.length === 0) return [];
  const { rows } = await db.query<MemoryRecord>(
    `SELECT ${COLUMNS} FROM memories
     WHERE project_id = $1 AND subject_id = $2 AND search @@ to_tsquery('simple', $3)
     ORDER BY status = 'current' DESC, ts_rank(search, to_tsquery('simple', $3)) DESC, learned_at DESC LIMIT $4`,
    [projectId, subjectId, words.map((w) => `'${w}'`).join(' | '), limit],
  );
  return rows.map(withDates);
}

export interface SubjectForgotten {
  memories: { current: number; superseded: number };
  memory_sources: number;
  threads: number;
  thread_messages: { user: number; assistant: number };
  runs_cleared: number;
  /** Experiment items copied from its runs (its threads' included), cleared with them. */
  experiment_items_cleared: number;
}

/**
 * Forgets a subject: its memories and their sources, its threads and their messages (through `deleteThread`, so that
 * each goes as a thread deletion does), its runs' messages on other threads, and the conversation of every run made for it (input, output, steps'
 * messages, their hops' too; the runs stay with their usage and cost), and the copies experiments made of those runs. One transaction; what was
 * removed, by kind.
 */
export async function forgetSubject(
  tx: Queryable,
  projectId: string,
  subjectId: string,
  deleteThread: (threadId: string) => Promise<{ experimentItems: number } | null>,
): Promise<SubjectForgotten> {
  // Its threads first, then its memories: the order every writer of both takes them in.
  const threads = await tx.query<{ id: string }>(
    'SELECT id FROM threads WHERE project_id = $1 AND subject_id = $2 ORDER BY id FOR UPDATE',
    [projectId, subjectId],
  );
  await lockSubjects(tx, projectId, [subjectId]);
  const sources = await tx.query(
    'DELETE FROM memory_sources s USING memories m WHERE s.memory_id = m.id AND m.project_id = $1 AND m.subject_id = $2',
    [projectId, subjectId],
  );
  const memories = await tx.query<{ id: string; status: 'current' | 'superseded' }>(
    'DELETE FROM memories WHERE project_id = $1 AND subject_id = $2 RETURNING id, status',
    [projectId, subjectId],
  );
  for (const memory of memories.rows) await recordEvent(tx, projectId, 'memory.deleted', { object: 'memory', id: memory.id });
  const threadIds = threads.rows.map((t) => t.id);
  const { rows: roles } = await tx.query<{ role: 'user' | 'assistant'; count: number }>(
    'SELECT role, count(*)::int AS count FROM thread_messages WHERE thread_id = ANY($1::text[]) GROUP BY role',
    [threadIds],
  );
  let experimentItems = 0;
  for (const threadId of threadIds) experimentItems += (await deleteThread(threadId))?.experimentItems ?? 0;
  // Its turns on threads that are not its own (a thread with no subject, or another's): those messages go, the rest stay.
  const { rows: stray } = await tx.query<{ thread_id: string; role: 'user' | 'assistant' }>(
    `DELETE FROM thread_messages WHERE project_id = $1 AND run_id IN (SELECT id FROM runs WHERE project_id = $1 AND subject_id = $2)
     RETURNING thread_id, role`,
    [projectId, subjectId],
  );
  const fewer = new Map<string, number>();
  for (const message of stray) fewer.set(message.thread_id, (fewer.get(message.thread_id) ?? 0) + 1);
  for (const [threadId, count] of fewer)
    await tx.query('UPDATE threads SET message_count = message_count - $2, updated_at = now() WHERE id = $1', [threadId, count]);
  const cleared = await clearConversations(tx, projectId, { subjectId });
  const count = (role: string) => (roles.find((r) => r.role === role)?.count ?? 0) + stray.filter((m) => m.role === role).length;
  return {
    memories: {
      current: memories.rows.filter((m) => m.status === 'current').length,
      superseded: memories.rows.filter((m) => m.status === 'superseded').length,
    },
    memory_sources: sources.rowCount ?? 0,
    threads: threadIds.length,
    thread_messages: { user: count('user'), assistant: count('assistant') },
    runs_cleared: cleared.runs,
    experiment_items_cleared: experimentItems + cleared.experimentItems,
  };
}

/** The subject's runs still to end: while one is, the subject cannot be forgotten (its turn would add what was forgotten). */
export async function activeRunsForSubject(db: Queryable, projectId: string, subjectId: string): Promise<{ id: string }[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM runs WHERE project_id = $1 AND subject_id = $2 AND status IN ('queued', 'in_progress') ORDER BY created_at LIMIT 1`,
    [projectId, subjectId],
  );
  return rows;
}
