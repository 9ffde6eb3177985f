/**
 * The judge, when AGENTPLANE_JUDGE_MODEL names a model: it reads a finished run's request, the context the
 * run was given and its answer, and answers through a `record_verdict` tool with a score in [0, 1] and a
 * rationale. The call's usage is recorded (source `judge`, attributed to the run) in the transaction that
 * stores the score, whatever the verdict; an answer without a usable verdict leaves the judge score absent. The
 * judge is not asked while a budget the call would count for (the run's project, key or agent) is exhausted.
 */
import type { Db } from '../../records/db.js';
import { transaction } from '../../records/db.js';
import { recordUsage } from '../../records/usage.js';
import { exhaustedBudget } from '../../records/budgets.js';
import { finishedRunOf, saveScores } from '../../records/run-scores.js';
import type { CatalogueModel, ModelCatalogue } from '../../models/catalogue.js';
import type { ModelGateway } from '../../models/gateway.js';
import { askForToolCall } from '../../models/tool-call-question.js';

export interface Judge {
  catalogue: ModelCatalogue;
  gateway: ModelGateway;
  /** The model's id in the catalogue. */
  id: string;
}

export const JUDGE_SCORER = 'judge';
const TOOL = 'record_verdict';
const MAX_REQUEST_CHARS = 4_000;
const MAX_CONTEXT_CHARS = 12_000;
const MAX_ANSWER_CHARS = 8_000;
const MAX_RATIONALE_CHARS = 2_000;

const PARAMETERS = {
  type: 'object',
  properties: {
    score: {
      type: 'number',
      minimum: 0,
      maximum: 1,
      description: '0 (useless or wrong) to 1 (correct, complete and supported by the context).',
    },
    rationale: { type: 'string', description: 'One to three sentences on why.' },
  },
  required: ['score', 'rationale'],
};

const SYSTEM =
  'You grade the answer an AI agent gave to a request. Judge whether it is correct, complete, responsive to the request and, when context ' +
  'is given, supported by that context. Call record_verdict exactly once with a score from 0 to 1 and a short rationale.';

export type Verdict = { scored: true; value: number; rationale: string } | { scored: false; reason: string };

export function judgeModelOf(judge: Judge): CatalogueModel | undefined {
  return judge.catalogue.find(judge.id);
}

/**
 * Asks the judge about one finished run and stores its score. A ModelCallError reaches the caller (it says
 * whether trying again can help); nothing is stored then.
 */
export async function judgeRun(db: Db, judge: Judge, runId: string, signal: AbortSignal): Promise<Verdict> {
  const model = judgeModelOf(judge);
  if (!model) return { scored: false, reason: `AGENTPLANE_JUDGE_MODEL names no model of the catalogue (${judge.id})` };
  const run = await finishedRunOf(db, runId);
  if (!run) return { scored: false, reason: 'the run is not finished' };
  if (run.outputText.trim() === '') return { scored: false, reason: 'the run gave no answer' };
  const { rows } = await db.query<{ project_id: string; api_key_id: string | null; agent_id: string | null }>(
    'SELECT project_id, api_key_id, agent_id FROM runs WHERE id = $1',
    [runId],
  );
  const { project_id: projectId, api_key_id: apiKeyId, agent_id: agentId } = rows[0]!;
  const exhausted = await exhaustedBudget(db, { projectId, apiKeyId, agentIds: agentId ? [agentId] : [] });
  if (exhausted) return { scored: false, reason: `the budget ${exhausted.id} is exhausted for this period` };

  const context = run.context.join('\n\n').slice(0, MAX_CONTEXT_CHARS);
  const prompt = [
    `Request:\n${run.input.join('\n').slice(0, MAX_REQUEST_CHARS)}`,
    context ? `Context the agent was given:\n${context}` : 'The agent was given no context.',
    `The run ended ${run.status}. Answer:\n${run.outputText.slice(0, MAX_ANSWER_CHARS)}`,
  ].join('\n\n');
  const answer = await askForToolCall(judge, {
    model,
    instructions: SYSTEM,
    prompt,
    tool: { name: TOOL, description: 'Records the grade of the answer.', parameters: PARAMETERS },
    signal,
    timeoutMs: 120_000,
  });
  const verdict = answer.arguments.called ? verdictIn(answer.arguments.value) : { scored: false as const, reason: answer.arguments.reason };
  await transaction(db, async (tx) => {
    await recordUsage(tx, {
      projectId,
      source: 'judge',
      runId,
      model: model.id,
      provider: model.provider,
      usage: answer.usage,
      price: answer.price,
    });
    if (verdict.scored) await saveScores(tx, runId, [{ scorer: JUDGE_SCORER, value: verdict.value, explanation: verdict.rationale }]);
  });
  return verdict;
}

/** The verdict in the tool call's arguments: a score in [0, 1] and a rationale; anything else is no verdict. */
function verdictIn(parsed: unknown): Verdict {
  const { score, rationale } = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { score?: unknown; rationale?: unknown };
  if (typeof score !== 'number' || !Number.isFinite(score) || score < 0 || score > 1)
    return { scored: false, reason: 'the verdict has no score from 0 to 1' };
  const text = typeof rationale === 'string' ? rationale.trim().slice(0, MAX_RATIONALE_CHARS) : '';
  return { scored: true, value: score, rationale: text || 'The judge gave no rationale.' };
}
