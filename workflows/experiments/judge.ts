/**
 * The `judge` scorer of an experiment: a model (the scorer's own, else the deployment's judge model,
 * AGENTPLANE_JUDGE_MODEL) grades an item's answer by the scorer's rubric, answering through the same
 * `record_verdict` tool call the quality judge uses. The call's usage is the caller's to record (source `judge`,
 * attributed to the item's run, as the quality judge records its own) with the item's scores. A judge that cannot
 * answer (no model, a budget spent, a provider error, no usable verdict) gives no score and says why.
 */
import type { Queryable } from '../../records/db.js';
import { exhaustedBudget } from '../../records/budgets.js';
import type { UsageEntry } from '../../records/usage.js';
import type { ModelCatalogue } from '../../models/catalogue.js';
import type { ModelGateway } from '../../models/gateway.js';
import { askForToolCall } from '../../models/tool-call-question.js';
import { judgeQuestion, judgeScore, type ScoredCase, type Score } from './scorers.js';
import type { ScorerSpec } from './scorer-specs.js';

/** The whole judge call, first byte to last: well inside the minute the activity that scores an item has. */
export const EXPERIMENT_JUDGE_TIMEOUT_MS = 40_000;

export interface JudgeModels {
  catalogue: ModelCatalogue;
  gateway: ModelGateway;
  /** AGENTPLANE_JUDGE_MODEL: the model a `judge` scorer without its own `model` uses. */
  judgeModel?: string;
}

/** Who the judge call is made for: the item's run, its project, and what its budgets count. */
export interface JudgedRun {
  runId: string;
  projectId: string;
  apiKeyId: string | null;
  agentIds: string[];
  input: string[];
}

export type JudgeOutcome = { score: Score; usage: UsageEntry } | { score: null; problem: string; usage?: UsageEntry };

/** Asks the judge about one item's answer. Never throws for the model's sake: its failure is the outcome's `problem`. */
export async function judgeCase(
  db: Queryable,
  models: JudgeModels,
  spec: Extract<ScorerSpec, { name: 'judge' }>,
  scored: ScoredCase,
  run: JudgedRun,
  signal: AbortSignal,
): Promise<JudgeOutcome> {
  const id = spec.model ?? models.judgeModel;
  if (id === undefined) return { score: null, problem: 'no judge model is named (by the scorer or AGENTPLANE_JUDGE_MODEL)' };
  const model = models.catalogue.find(id);
  if (!model) return { score: null, problem: `the judge model ${id} is not in the model catalogue` };
  if (scored.outputText.trim() === '') return { score: null, problem: 'the run gave no answer to judge' };
  const exhausted = await exhaustedBudget(db, { projectId: run.projectId, apiKeyId: run.apiKeyId, agentIds: run.agentIds });
  if (exhausted) return { score: null, problem: `the budget ${exhausted.id} is exhausted for this period` };
  const question = judgeQuestion(spec, { ...scored, input: run.input });
  let answer;
  try {
    answer = await askForToolCall(models, { model, ...question, signal, timeoutMs: EXPERIMENT_JUDGE_TIMEOUT_MS });
  } catch (err) {
    return { score: null, problem: `the judge model's call failed: ${err instanceof Error ? err.message : String(err)}` };
  }
  const usage: UsageEntry = {
    projectId: run.projectId,
    source: 'judge',
    runId: run.runId,
    model: model.id,
    provider: model.provider,
    usage: answer.usage,
    price: answer.price,
  };
  if (!answer.arguments.called) return { score: null, problem: answer.arguments.reason, usage };
  const score = judgeScore(answer.arguments.value);
  return score ? { score, usage } : { score: null, problem: 'the verdict has no score from 0 to 1', usage };
}
