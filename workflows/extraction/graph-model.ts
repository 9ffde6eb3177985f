/**
 * Relations read by a model, when AGENTPLANE_GRAPH_MODEL names one: given a passage and the entities found in it
 * offline, the model answers through a `record_relations` tool; only relations between those entities whose
 * evidence is a verbatim sentence of the passage are kept, anchored to that sentence's offsets. Each answer is
 * stored with its passage and its usage recorded (charged at the price in effect) in one transaction, so a stage
 * that runs again reads what it paid for and a passage is charged once. The project's budgets gate the calls.
 */
import type { Context } from '@temporalio/activity';
import { transaction, type Db } from '../../records/db.js';
import { recordUsage } from '../../records/usage.js';
import { exhaustedBudget } from '../../records/budgets.js';
import { passageHash, storeAnswer, storedAnswers, type StatedRelation } from '../../records/graph-model-answers.js';
import type { CatalogueModel, ModelCatalogue } from '../../models/catalogue.js';
import { ModelCallError, type ModelGateway } from '../../models/gateway.js';
import { askForToolCall } from '../../models/tool-call-question.js';
import type { EntityMention, Passage } from './engines/entities.js';

export interface GraphModel {
  catalogue: ModelCatalogue;
  gateway: ModelGateway;
  /** The model's id in the catalogue. */
  id: string;
}

export interface ModelRelation {
  type: string;
  source: number;
  target: number;
  passage: number;
  start: number;
  end: number;
}

const TOOL = 'record_relations';
/** The passage text a call reads at most; longer passages are read in their first part only. */
const MAX_PASSAGE_CHARS = 6000;
const RELATION_NAME = /^[a-z][a-z_]{1,39}$/;
/** The stage's attempts that wait for a provider that may answer later. */
const MODEL_ATTEMPTS = 3;

const PARAMETERS = {
  type: 'object',
  properties: {
    relations: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          source: { type: 'string', description: 'An entity from the list, exactly as listed.' },
          relation: { type: 'string', description: 'snake_case, e.g. works_for, acquired, located_in, supplies, invested_in.' },
          target: { type: 'string', description: 'An entity from the list, exactly as listed.' },
          evidence: { type: 'string', description: 'The sentence of the text that states it, copied exactly.' },
        },
        required: ['source', 'relation', 'target', 'evidence'],
      },
    },
  },
  required: ['relations'],
};

/** Whether the stage may still ask the model: it stops for good once a budget of the project is exhausted. */
export interface ModelSpending {
  stopped: boolean;
}

/**
 * The relations the model finds in each passage that has at least two entities. A passage answered before (an
 * earlier attempt of the stage) is not asked again. A call the provider refuses for good is skipped (logged); one
 * that may work later throws, so the stage is retried, up to its third attempt: after that the file goes on with
 * the relations found offline rather than wait on the provider. Once the project's budget is exhausted no more
 * passages are asked: the file goes on with what was answered and the relations found offline.
 */
export async function modelRelations(
  db: Db,
  fileId: string,
  projectId: string,
  model: GraphModel,
  passages: Passage[],
  mentions: EntityMention[],
  context: Context,
  spending: ModelSpending,
): Promise<ModelRelation[]> {
  const entry = model.catalogue.find(model.id);
  if (!entry) {
    context.log.warn('AGENTPLANE_GRAPH_MODEL names no model of the catalogue; relations are found offline only', { model: model.id });
    return [];
  }
  const asked = passages
    .map((passage, index) => {
      const inPassage = mentions
        .map((m, i) => ({ m, i }))
        .filter(({ m }) => m.passage === index && m.type !== 'date' && m.type !== 'money');
      const names = [...new Set(inPassage.map(({ m }) => m.name))];
      const text = passage.text.slice(0, MAX_PASSAGE_CHARS);
      return { index, inPassage, names, text, hash: passageHash(text, names) };
    })
    .filter(({ names }) => names.length >= 2);
  const stored = await storedAnswers(
    db,
    fileId,
    entry.id,
    asked.map((a) => a.hash),
  );
  const found: ModelRelation[] = [];
  for (const { index, inPassage, names, text, hash } of asked) {
    let answer = stored.get(hash);
    if (!answer) {
      if (!spending.stopped && (await exhaustedBudget(db, { projectId, apiKeyId: null, agentIds: [] }))) {
        spending.stopped = true;
        context.log.warn("the project's budget is exhausted; the file's remaining relations are found offline only", {
          fileId,
          model: entry.id,
        });
      }
      if (spending.stopped) continue;
      answer = await ask(db, { fileId, projectId, hash }, entry, model, text, names, context);
      stored.set(hash, answer);
    }
    for (const relation of answer) {
      const source = inPassage.find(({ m }) => m.name === relation.source);
      const target = inPassage.find(({ m }) => m.name === relation.target);
      const evidence = relation.evidence.trim();
      const start = evidence.length > 0 ? text.indexOf(evidence) : -1;
      if (!source || !target || source.m.canonical === target.m.canonical || start < 0 || !RELATION_NAME.test(relation.relation)) continue;
      found.push({ type: relation.relation, source: source.i, target: target.i, passage: index, start, end: start + evidence.length });
    }
  }
  return found;
}

interface PassageOf {
  fileId: string;
  projectId: string;
  hash: string;
}

async function ask(
  db: Db,
  { fileId, projectId, hash }: PassageOf,
  entry: CatalogueModel,
  model: GraphModel,
  text: string,
  names: string[],
  context: Context,
): Promise<StatedRelation[]> {
  try {
    const answer = await askForToolCall(model, {
      model: entry,
      instructions:
        'You read a passage and record the relations it states between the listed entities, by calling record_relations once. ' +
        'Use only listed entities, exactly as listed; copy the sentence that states each relation exactly as evidence. ' +
        'Record nothing the passage does not state.',
      prompt: `Entities:\n${names.map((n) => `- ${n}`).join('\n')}\n\nPassage:\n${text}`,
      tool: { name: TOOL, description: 'Records the relations the passage states.', parameters: PARAMETERS },
      signal: context.cancellationSignal,
      timeoutMs: 120_000,
    });
    const relations = answer.arguments.called ? relationsIn(answer.arguments.value) : [];
    await transaction(db, async (tx) => {
      await recordUsage(tx, {
        projectId,
        source: 'extraction',
        fileId,
        passageHash: hash,
        model: entry.id,
        provider: entry.provider,
        usage: answer.usage,
        price: answer.price,
      });
      await storeAnswer(tx, fileId, entry.id, hash, relations);
    });
    return relations;
  } catch (err) {
    if (!(err instanceof ModelCallError) || context.cancellationSignal.aborted) throw err;
    if (err.retryable && context.info.attempt < MODEL_ATTEMPTS) throw err;
    context.log.warn('the graph model did not answer a passage; its relations are found offline only', {
      model: entry.id,
      error: err.message,
    });
    return [];
  }
}

/** The tool call's relations that have the four strings; anything else in the answer is ignored. */
function relationsIn(parsed: unknown): StatedRelation[] {
  const relations = typeof parsed === 'object' && parsed !== null ? (parsed as { relations?: unknown }).relations : undefined;
  if (!Array.isArray(relations)) return [];
  return relations.filter(
    (r): r is StatedRelation =>
      typeof r === 'object' &&
      r !== null &&
      ['source', 'relation', 'target', 'evidence'].every((k) => typeof (r as Record<string, unknown>)[k] === 'string'),
  );
}
