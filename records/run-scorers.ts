/**
 * The heuristic scorers of a finished run: pure functions of what the run recorded, each a value in [0, 1]
 * with a short explanation, or nothing when the scorer has nothing to judge (no tool call, no context).
 */

export const HEURISTIC_SCORERS = ['completion', 'latency', 'tool_errors', 'non_empty', 'groundedness'] as const;
export type HeuristicScorer = (typeof HEURISTIC_SCORERS)[number];

export interface Score {
  scorer: string;
  value: number;
  explanation: string;
}

export interface FinishedRun {
  status: 'completed' | 'failed' | 'cancelled';
  /** From the run's creation to its end: what its caller waited, queueing included. */
  durationMs: number;
  outputText: string;
  /** The run's tool calls (a network run's: its hops'), whether each ended in an error. */
  toolCalls: { isError: boolean }[];
  /** What the run was given to answer from: tool results, cited passages, attached files' text. */
  context: string[];
  /** The run's own input: repeating the question is not ungrounded. */
  input: string[];
}

/** Latency: full marks up to this long, then the score halves every LATENCY_HALF_LIFE_MS. */
export const LATENCY_FULL_MS = 5_000;
export const LATENCY_HALF_LIFE_MS = 30_000;
/** An answer's words are looked up in this much of its context at most. */
export const MAX_CONTEXT_CHARS = 1_000_000;

const STOP_WORDS = new Set(
  (
    'the and for are but not you all any can had her was one our out his has have him how its may new now own say she too use who why ' +
    'yes this that with from they them then than there their these those what when where which while will would could should about ' +
    'above after again against also because been before being below between both did does doing down during each few further here ' +
    'into just more most much must off once only other over same some such very were your yours ours itself himself herself themselves ' +
    'according based given per via within without found find says said text context answer question file files document documents'
  ).split(' '),
);

/** The answer's content words: letters or digits, lower case, three characters or more (any number), no stop words. */
export function contentWords(text: string): Set<string> {
  const words = new Set<string>();
  for (const match of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
    const word = match[0];
    if ((word.length >= 3 || /^\p{N}+$/u.test(word)) && !STOP_WORDS.has(word)) words.add(word);
  }
  return words;
}

const round = (value: number) => Math.round(value * 10_000) / 10_000;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export function completion(run: FinishedRun): Score {
  return { scorer: 'completion', value: run.status === 'completed' ? 1 : 0, explanation: `The run ended ${run.status}.` };
}

/** 1 up to 5 s, then 2^(-(d - 5 s) / 30 s): 0.5 at 35 s, 0.25 at 65 s. */
export function latency(run: FinishedRun): Score {
  const over = Math.max(0, run.durationMs - LATENCY_FULL_MS);
  const value = round(Math.pow(2, -over / LATENCY_HALF_LIFE_MS));
  return {
    scorer: 'latency',
    value,
    explanation:
      over === 0
        ? `The run took ${seconds(run.durationMs)}, within ${seconds(LATENCY_FULL_MS)}.`
        : `The run took ${seconds(run.durationMs)}; the score halves every ${seconds(LATENCY_HALF_LIFE_MS)} past ${seconds(LATENCY_FULL_MS)}.`,
  };
}

export function toolErrors(run: FinishedRun): Score | null {
  if (run.toolCalls.length === 0) return null;
  const ok = run.toolCalls.filter((call) => !call.isError).length;
  return {
    scorer: 'tool_errors',
    value: round(ok / run.toolCalls.length),
    explanation: `${ok} of ${run.toolCalls.length} tool call(s) succeeded.`,
  };
}

export function nonEmpty(run: FinishedRun): Score {
  const empty = run.outputText.trim().length === 0;
  return {
    scorer: 'non_empty',
    value: empty ? 0 : 1,
    explanation: empty ? 'The run gave no answer.' : `The answer has ${run.outputText.trim().length} characters.`,
  };
}

/**
 * The share of the answer's content words found in the context it was given (or in its own input). Not
 * scored without context, or without an answer to score.
 */
export function groundedness(run: FinishedRun): Score | null {
  const context = run.context.filter((text) => text.trim().length > 0);
  if (context.length === 0) return null;
  const answer = contentWords(run.outputText);
  if (answer.size === 0) return null;
  let budget = MAX_CONTEXT_CHARS;
  const known = contentWords(run.input.join('\n'));
  for (const text of context) {
    if (budget <= 0) break;
    for (const word of contentWords(text.slice(0, budget))) known.add(word);
    budget -= text.length;
  }
  const unsupported = [...answer].filter((word) => !known.has(word));
  const supported = answer.size - unsupported.length;
  const missing =
    unsupported.length > 0 ? ` Not in the context: ${unsupported.slice(0, 8).join(', ')}${unsupported.length > 8 ? ', …' : ''}.` : '';
  return {
    scorer: 'groundedness',
    value: round(supported / answer.size),
    explanation: `${supported} of ${answer.size} content word(s) of the answer appear in the context it was given.${missing}`,
  };
}

const SCORERS: Record<HeuristicScorer, (run: FinishedRun) => Score | null> = {
  completion,
  latency,
  tool_errors: toolErrors,
  non_empty: nonEmpty,
  groundedness,
};

/** The scores of the chosen heuristics (all by default); a scorer with nothing to judge gives none. */
export function heuristicScores(run: FinishedRun, scorers: readonly HeuristicScorer[] = HEURISTIC_SCORERS): Score[] {
  return scorers.map((name) => SCORERS[name](run)).filter((score): score is Score => score !== null);
}
