/**
 * The scorers an experiment can name, and how an item's run is scored with them. The heuristics are the run's own
 * scores (records/run-scorers.ts, computed as every run ends); `exact_match` compares the answer with the item's
 * expected one. This is the one place scorer names are resolved: richer scorers (a judge, faithfulness) come in
 * by adding an entry to SCORERS, with nothing else to change.
 */
import { HEURISTIC_SCORERS, type Score } from '../../records/run-scorers.js';

/** What a scorer reads of an item's run once it has ended. */
export interface ScoredRun {
  status: 'completed' | 'failed' | 'cancelled';
  output: string;
  /** The run's own scores (the heuristics), by scorer. */
  runScores: Map<string, Score>;
  /** The item's expected answer; null when it names none. */
  expected: unknown;
}

/** A scorer: a score of the run, or null when it has nothing to judge. */
type Scorer = (run: ScoredRun, spec: ScorerSpec) => Score | null;

/** A scorer as an experiment names it: its name alone, or an object with its `name` and settings. */
export type ScorerSpec = string | ({ name: string } & Record<string, unknown>);

const fromRun =
  (name: string): Scorer =>
  (run) =>
    run.runScores.get(name) ?? null;

const SCORERS: Record<string, Scorer> = {
  ...Object.fromEntries(HEURISTIC_SCORERS.map((name) => [name, fromRun(name)])),
  exact_match: exactMatch,
};

export const scorerName = (spec: ScorerSpec): string => (typeof spec === 'string' ? spec : spec.name);

/** The first of `specs` no scorer answers to; null when every one is known. */
export function unknownScorer(specs: ScorerSpec[]): string | null {
  return specs.map(scorerName).find((name) => !(name in SCORERS)) ?? null;
}

/** The scorers an experiment uses when it names none: `completion`, and `exact_match` when any item has an answer. */
export function defaultScorers(anyExpected: boolean): ScorerSpec[] {
  return anyExpected ? ['completion', 'exact_match'] : ['completion'];
}

/** The run's scores by each of `specs`, in order; a scorer with nothing to judge gives none. */
export function scoreRun(run: ScoredRun, specs: ScorerSpec[]): Score[] {
  return specs.map((spec) => SCORERS[scorerName(spec)]?.(run, spec) ?? null).filter((score): score is Score => score !== null);
}

/**
 * 1 when the answer, trimmed, is the expected one: the same text for a string, or, for any other JSON value, an
 * answer that parses to an equal value. Not scored for an item with no expected answer.
 */
export function exactMatch(run: Pick<ScoredRun, 'output' | 'expected'>): Score | null {
  if (run.expected === null || run.expected === undefined) return null;
  const answer = run.output.trim();
  const match = typeof run.expected === 'string' ? answer === run.expected.trim() : sameJson(answer, run.expected);
  return {
    scorer: 'exact_match',
    value: match ? 1 : 0,
    explanation: match ? 'The answer is the expected one.' : 'The answer differs from the expected one.',
  };
}

function sameJson(text: string, expected: unknown): boolean {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  return canonical(value) === canonical(expected);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
