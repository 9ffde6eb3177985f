/**
 * Memory's I/O: reading what a run's subject stated in the run's turn of its thread, and storing it as memories
 * with their sources, in one transaction that holds the thread (a thread deleted meanwhile keeps nothing). With
 * AGENTPLANE_MEMORY_MODEL set, the model reads the messages (its call charged to the run as source `memory`, in
 * that transaction, and not made while a budget it counts for is exhausted); otherwise, or when asked to, the
 * offline engine does.
 */
import { Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import { transaction } from '../../records/db.js';
import { runById } from '../../records/runs.js';
import { learnFacts, type LearnedFact } from '../../records/memories.js';
import { recordUsage, type UsageEntry } from '../../records/usage.js';
import { exhaustedBudget } from '../../records/budgets.js';
import type { ModelCatalogue } from '../../models/catalogue.js';
import { ModelCallError, type ModelGateway } from '../../models/gateway.js';
import { factsIn, valueKey, type StatedFact } from './statements.js';
import { memoryModelOf, readWithModel, type MemoryReader } from './model-reader.js';
import { keepBeating } from '../heartbeats.js';
import { modelCallFailure } from '../model-failure.js';

export interface MemoryActivityDependencies {
  db: Db;
  /** `memoryModel`: AGENTPLANE_MEMORY_MODEL, the model that reads what subjects state, if any. */
  models: { catalogue: ModelCatalogue; gateway: ModelGateway; memoryModel?: string };
}

// The offline engine's name, as memories record who read them.
const RULES_EXTRACTOR = 'rules';
// What one run's messages may teach, at most: the first facts stated (a run's input is up to 256 KiB of text).
const MAX_FACTS_PER_RUN = 200;

interface SubjectMessage {
  id: string;
  seq: number;
  content: string;
  created_at: Date;
}

export const createMemoryActivities = ({ db, models }: MemoryActivityDependencies) => {
  const reader: MemoryReader | undefined = models.memoryModel
    ? { catalogue: models.catalogue, gateway: models.gateway, id: models.memoryModel }
    : undefined;

  return {
    /**
     * Stores what the run's subject stated in the run's messages; answers how many new memories that made. `withModel`
     * false: the offline engine reads them, whatever is configured (the workflow's fallback once the model has failed).
     */
    async learnFromRun({ runId, withModel = true }: { runId: string; withModel?: boolean }): Promise<{ created: number }> {
      const run = await runById(db, runId);
      if (!run?.thread_id || !run.subject_id) return { created: 0 };
      const { thread_id: threadId, subject_id: subjectId } = run;
      const { rows: messages } = await db.query<SubjectMessage>(
        `SELECT id, seq, content, created_at FROM thread_messages WHERE thread_id = $1 AND run_id = $2 AND role = 'user' ORDER BY seq`,
        [threadId, runId],
      );
      if (messages.length === 0) return { created: 0 };
      const learned = (message: SubjectMessage, fact: StatedFact, extractor: string): LearnedFact => ({
        attribute: fact.attribute,
        value: fact.value,
        valueKey: valueKey(fact.value),
        statement: fact.statement,
        confidence: fact.confidence,
        extractor,
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
      });

      let facts: LearnedFact[] | undefined;
      let charge: UsageEntry | undefined;
      const model = withModel && reader ? memoryModelOf(reader) : undefined;
      if (model) {
        // The model's reading commits with its charge: once charged, the run has been read.
        const read = await db.query(`SELECT 1 FROM usage_records WHERE source = 'memory' AND run_id = $1 LIMIT 1`, [runId]);
        if (read.rowCount) return { created: 0 };
        const exhausted = await exhaustedBudget(db, {
          projectId: run.project_id,
          apiKeyId: run.api_key_id,
          agentIds: run.agent_id ? [run.agent_id] : [],
        });
        if (!exhausted) {
          const beat = keepBeating();
          try {
            const reading = await readWithModel(reader!, model, messages, Context.current().cancellationSignal);
            facts = reading.facts.map(({ message, fact }) => learned(messages[message]!, fact, model.id));
            charge = {
              projectId: run.project_id,
              source: 'memory',
              runId,
              model: model.id,
              provider: model.provider,
              usage: reading.answer.usage,
              price: reading.answer.price,
            };
          } catch (err) {
            throw err instanceof ModelCallError ? modelCallFailure(err) : err;
          } finally {
            beat.stop();
          }
        }
      }
      // No model, or a budget it would count for is exhausted: the offline engine, which costs nothing.
      facts ??= messages.flatMap((message) => factsIn(message.content).map((fact) => learned(message, fact, RULES_EXTRACTOR)));
      facts = facts.slice(0, MAX_FACTS_PER_RUN);
      if (facts.length === 0 && !charge) return { created: 0 };
      // Beats while it waits (for the thread, say), so that a worker that dies is noticed within the heartbeat timeout.
      const beat = keepBeating();
      try {
        return await transaction(db, async (tx) => {
          // The thread is held until the memories are stored: its deletion waits, or came first and there is nothing to cite.
          const held = await tx.query('SELECT 1 FROM threads WHERE id = $1 FOR SHARE', [threadId]);
          if (charge) await recordUsage(tx, charge);
          if (held.rowCount === 0) return { created: 0 };
          const { created } = await learnFacts(tx, run.project_id, subjectId, facts);
          return { created: created.length };
        });
      } finally {
        beat.stop();
      }
    },
  };
};

export type MemoryActivities = ReturnType<typeof createMemoryActivities>;
