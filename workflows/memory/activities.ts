/**
 * Memory's I/O: reading what a run's subject stated in the run's turn of its thread, and storing it as memories
 * with their sources, in one transaction that holds the thread (a thread deleted meanwhile keeps nothing).
 */
import type { Db } from '../../records/db.js';
import { transaction } from '../../records/db.js';
import { runById } from '../../records/runs.js';
import { learnFacts, type LearnedFact } from '../../records/memories.js';
import { factsIn, valueKey } from './statements.js';
import { keepBeating } from '../heartbeats.js';

export interface MemoryActivityDependencies {
  db: Db;
}

// The offline engine's name, as memories record who read them.
const RULES_EXTRACTOR = 'rules';

export const createMemoryActivities = ({ db }: MemoryActivityDependencies) => ({
  /** Stores what the run's subject stated in the run's messages; answers how many new memories that made. */
  async learnFromRun({ runId }: { runId: string }): Promise<{ created: number }> {
    const run = await runById(db, runId);
    if (!run?.thread_id || !run.subject_id) return { created: 0 };
    const { thread_id: threadId, subject_id: subjectId } = run;
    const { rows: messages } = await db.query<{ id: string; seq: number; content: string; created_at: Date }>(
      `SELECT id, seq, content, created_at FROM thread_messages WHERE thread_id = $1 AND run_id = $2 AND role = 'user' ORDER BY seq`,
      [threadId, runId],
    );
    const facts: LearnedFact[] = messages.flatMap((message) =>
      factsIn(message.content).map((fact) => ({
        attribute: fact.attribute,
        value: fact.value,
        valueKey: valueKey(fact.value),
        statement: fact.statement,
        confidence: fact.confidence,
        extractor: RULES_EXTRACTOR,
        source: {
          threadId,
          runId,
          messageId: message.id,
          messageSeq: message.seq,
          start: fact.start,
          end: fact.end,
          quote: [...message.content].slice(fact.start, fact.end).join(''),
          learnedAt: message.created_at,
        },
      })),
    );
    if (facts.length === 0) return { created: 0 };
    // Beats while it waits (for the thread, say), so that a worker that dies is noticed within the heartbeat timeout.
    const beat = keepBeating();
    try {
      return await transaction(db, async (tx) => {
        // The thread is held until the memories are stored: its deletion waits, or came first and there is nothing to cite.
        const held = await tx.query('SELECT 1 FROM threads WHERE id = $1 FOR SHARE', [threadId]);
        if (held.rowCount === 0) return { created: 0 };
        const { created } = await learnFacts(tx, run.project_id, subjectId, facts);
        return { created: created.length };
      });
    } finally {
      beat.stop();
    }
  },
});

export type MemoryActivities = ReturnType<typeof createMemoryActivities>;
