/**
 * The scorers of an experiment's output: pure functions of what a run answered, what its dataset item expected and
 * what it cited, each a value in [0, 1] with a short explanation, or null when the scorer has nothing to judge
 * (as the heuristics of records/run-scorers.ts). The judge's model call is the caller's: here are its question
 * (judgeQuestion) and the reading of its verdict (judgeScore).
 */
import { contentWords, heuristicScores, type FinishedRun, type Score } from '../../records/run-scorers.js';
import { compiledSchema } from '../../tools/argument-schemas.js';
import { canonicalJson } from '../../records/datasets.js';
import type { ScorerSpec } from './scorer-specs.js';

export type { Score } from '../../records/run-scorers.js';

/** What the output scorers read of one case of an experiment. */
export interface ScoredCase {
  /** The item's expected answer: a string, or any JSON value; null or undefined when it names none. */
  expected: unknown;
  /** The run's answer. */
  outputText: string;
  /** The passages the run cited (run_steps.citations quotes): what faithfulness checks the answer against. */
  citations: string[];
}

/** Texts are compared on this many characters at most: an edit distance costs the product of the two lengths. */
export const MAX_COMPARED_CHARS = 4_000;
/** A claim is supported when one cited passage holds at least this share of its content words. */
export const CLAIM_SUPPORT_SHARE = 0.6;
const MAX_EXPLANATION_ITEMS = 5;

const round = (value: number) => Math.round(value * 10_000) / 10_000;
const hasExpected = (expected: unknown) => expected !== undefined && expected !== null;
const quoted = (text: string, max = 80) => JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * The expected answer and the output as the text they are compared by: a string expected as it is; any other
 * value as canonical JSON, against the output's canonical JSON when the output parses, or the output as written.
 */
function comparedTexts(expected: unknown, outputText: string): { expected: string; output: string } {
  if (typeof expected === 'string') return { expected, output: outputText };
  let output = outputText;
  try {
    output = canonicalJson(JSON.parse(outputText));
  } catch {
    // Not JSON: compared as written, so it cannot match.
  }
  return { expected: canonicalJson(expected), output };
}

export function exactMatch(spec: Extract<ScorerSpec, { name: 'exact_match' }>, scored: ScoredCase): Score | null {
  if (!hasExpected(scored.expected)) return null;
  let { expected, output } = comparedTexts(scored.expected, scored.outputText);
  if (spec.trim) [expected, output] = [expected.trim(), output.trim()];
  if (!spec.case_sensitive) [expected, output] = [expected.toLowerCase(), output.toLowerCase()];
  const match = expected === output;
  return {
    scorer: 'exact_match',
    value: match ? 1 : 0,
    explanation: match ? 'The answer is the expected one.' : `The answer is not the expected ${quoted(expected)}.`,
  };
}

/** The Levenshtein distance between two texts, by code point, in two rows of memory. */
export function editDistance(a: string, b: string): number {
  const left = [...a];
  const right = [...b];
  if (left.length < right.length) return editDistance(b, a);
  let previous = Array.from({ length: right.length + 1 }, (_, j) => j);
  for (let i = 1; i <= left.length; i++) {
    const current = [i];
    for (let j = 1; j <= right.length; j++) {
      const substitution = previous[j - 1]! + (left[i - 1] === right[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[right.length]!;
}

/** 1 - distance / the longer length: 1 for the same text, 0 for texts with nothing in common. */
export function similarity(a: string, b: string): number {
  const longer = Math.max([...a].length, [...b].length);
  return longer === 0 ? 1 : 1 - editDistance(a, b) / longer;
}

// Case, surrounding space and runs of white space do not count against a near match.
const normalised = (text: string) => text.trim().replace(/\s+/g, ' ').toLowerCase().slice(0, MAX_COMPARED_CHARS);

export function fuzzyMatch(spec: Extract<ScorerSpec, { name: 'fuzzy_match' }>, scored: ScoredCase): Score | null {
  if (!hasExpected(scored.expected)) return null;
  const { expected, output } = comparedTexts(scored.expected, scored.outputText);
  const value = round(similarity(normalised(expected), normalised(output)));
  const verdict =
    spec.threshold === undefined
      ? ''
      : value >= spec.threshold
        ? ` It passes (threshold ${spec.threshold}).`
        : ` It fails (threshold ${spec.threshold}).`;
  return {
    scorer: 'fuzzy_match',
    value,
    explanation: `The answer is ${Math.round(value * 100)}% similar to the expected one (edit distance, ignoring case and spacing).${verdict}`,
  };
}

/** 1 when the output is JSON (a fenced ```json block counts) that the schema accepts, else 0 with why. */
export function jsonSchemaMatch(spec: Extract<ScorerSpec, { name: 'json_schema' }>, scored: ScoredCase): Score {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/.exec(scored.outputText);
  let value: unknown;
  try {
    value = JSON.parse(fenced ? fenced[1]! : scored.outputText);
  } catch {
    return { scorer: 'json_schema', value: 0, explanation: 'The answer is not JSON.' };
  }
  const compiled = compiledSchema(spec.schema);
  if ('problem' in compiled) return { scorer: 'json_schema', value: 0, explanation: `The schema ${compiled.problem}.` };
  const problem = compiled.check(value);
  return problem === null
    ? { scorer: 'json_schema', value: 1, explanation: 'The answer is JSON that matches the schema.' }
    : {
        scorer: 'json_schema',
        value: 0,
        explanation: `The answer is JSON that does not match the schema: ${problem.replace(/^arguments/, 'answer')}.`,
      };
}

const sentences = new Intl.Segmenter('en', { granularity: 'sentence' });

/** The answer's claims: its sentences (and lines), each with at least one content word. */
export function claimsOf(text: string): string[] {
  return text
    .split(/\n+/)
    .flatMap((line) => [...sentences.segment(line)].map((part) => part.segment.trim()))
    .filter((claim) => contentWords(claim).size > 0);
}

/**
 * The share of the answer's claims that a passage the run cited supports: one passage holds at least
 * CLAIM_SUPPORT_SHARE of the claim's content words. Not scored without citations, or without a claim.
 */
export function faithfulness(scored: ScoredCase): Score | null {
  const passages = scored.citations.filter((quote) => quote.trim() !== '').map((quote) => contentWords(quote));
  if (passages.length === 0) return null;
  const claims = claimsOf(scored.outputText);
  if (claims.length === 0) return null;
  const unsupported = claims.filter((claim) => {
    const words = [...contentWords(claim)];
    return !passages.some((passage) => words.filter((word) => passage.has(word)).length / words.length >= CLAIM_SUPPORT_SHARE);
  });
  const supported = claims.length - unsupported.length;
  const listed = unsupported.slice(0, MAX_EXPLANATION_ITEMS).map((claim) => quoted(claim));
  const more = unsupported.length > MAX_EXPLANATION_ITEMS ? ', …' : '';
  return {
    scorer: 'faithfulness',
    value: round(supported / claims.length),
    explanation:
      `${supported} of ${claims.length} claim(s) of the answer are supported by the passages it cited.` +
      (unsupported.length ? ` Unsupported: ${listed.join('; ')}${more}.` : ''),
  };
}

export const JUDGE_TOOL = {
  name: 'record_verdict',
  description: 'Records the grade of the answer.',
  parameters: {
    type: 'object',
    properties: {
      score: { type: 'number', minimum: 0, maximum: 1, description: '0 (fails the rubric entirely) to 1 (meets it fully).' },
      rationale: { type: 'string', description: 'One to three sentences on why.' },
    },
    required: ['score', 'rationale'],
  },
};
const MAX_REQUEST_CHARS = 4_000;
const MAX_EXPECTED_CHARS = 4_000;
const MAX_ANSWER_CHARS = 8_000;
const MAX_RATIONALE_CHARS = 2_000;

/** What the judge is asked about one case: the instructions (with the rubric), the prompt, and the verdict tool. */
export function judgeQuestion(
  spec: Extract<ScorerSpec, { name: 'judge' }>,
  scored: ScoredCase & { input: string[] },
): { instructions: string; prompt: string; tool: typeof JUDGE_TOOL } {
  const instructions =
    'You grade the answer an AI agent gave to a request, by the rubric below and nothing else. Call record_verdict exactly once ' +
    `with a score from 0 to 1 and a short rationale.\n\nRubric:\n${spec.rubric}`;
  const expected = hasExpected(scored.expected)
    ? `Expected answer:\n${(typeof scored.expected === 'string' ? scored.expected : canonicalJson(scored.expected)).slice(0, MAX_EXPECTED_CHARS)}`
    : 'No expected answer is given.';
  const prompt = [
    `Request:\n${scored.input.join('\n').slice(0, MAX_REQUEST_CHARS)}`,
    expected,
    `Answer:\n${scored.outputText.slice(0, MAX_ANSWER_CHARS)}`,
  ].join('\n\n');
  return { instructions, prompt, tool: JUDGE_TOOL };
}

/** The judge's verdict (its tool call's parsed arguments) as a score; null when it gave no score from 0 to 1. */
export function judgeScore(parsed: unknown): Score | null {
  const { score, rationale } = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { score?: unknown; rationale?: unknown };
  if (typeof score !== 'number' || !Number.isFinite(score) || score < 0 || score > 1) return null;
  const text = typeof rationale === 'string' ? rationale.trim().slice(0, MAX_RATIONALE_CHARS) : '';
  return { scorer: 'judge', value: score, explanation: text || 'The judge gave no rationale.' };
}

/**
 * The score of one scorer that needs no model: a heuristic (of the finished run) or an output scorer (of the
 * case). Null when it has nothing to judge; the judge is not scored here (judgeQuestion, judgeScore).
 */
export function scoreCase(spec: ScorerSpec, scored: ScoredCase, run: FinishedRun): Score | null {
  switch (spec.name) {
    case 'exact_match':
      return exactMatch(spec, scored);
    case 'fuzzy_match':
      return fuzzyMatch(spec, scored);
    case 'json_schema':
      return jsonSchemaMatch(spec, scored);
    case 'faithfulness':
      return faithfulness(scored);
    case 'judge':
      return null;
    default:
      return heuristicScores(run, [spec.name])[0] ?? null;
  }
}
