/**
 * The scorers of an experiment's output: pure functions of what a run answered, what its dataset item expected and
 * what it cited, each a value in [0, 1] with a short explanation, or null when the scorer has nothing to judge
 * (as the heuristics of records/run-scorers.ts). The judge's model call is the caller's: here are its question
 * (judgeQuestion) and the reading of its verdict (judgeScore).
 */
import { contentWords, heuristicScores, type FinishedRun, type Score } from '../../records/run-scorers.js';
import { l as rougeL, n as rougeN, treeBankTokenize } from 'js-rouge';
import { compiledSchema } from '../../tools/argument-schemas.js';
import { canonicalJson } from '../../records/datasets.js';
import type { ScorerSpec, SimilarityMetric, StringCheckOperation } from './scorer-specs.js';

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

const CHECKED: Record<StringCheckOperation, (output: string, expected: string) => boolean> = {
  eq: (output, expected) => output === expected,
  ne: (output, expected) => output !== expected,
  like: (output, expected) => output.includes(expected),
  ilike: (output, expected) => output.toLowerCase().includes(expected.toLowerCase()),
};
/** What each operation found, when the answer passes and when it fails. */
const CHECK_VERDICTS: Record<StringCheckOperation, [pass: string, fail: string]> = {
  eq: ['is', 'is not'],
  ne: ['is not', 'is, and must not be,'],
  like: ['contains', 'does not contain'],
  ilike: ['contains (ignoring case)', 'does not contain (even ignoring case)'],
};

/**
 * 1 when the answer passes the check against the expected text, else 0: `eq` the same text, `ne` any other,
 * `like` holds it, `ilike` holds it ignoring case. Texts are compared as written (as OpenAI's string check grader does).
 */
export function stringCheck(spec: Extract<ScorerSpec, { name: 'string_check' }>, scored: ScoredCase): Score | null {
  if (!hasExpected(scored.expected)) return null;
  const { expected, output } = comparedTexts(scored.expected, scored.outputText);
  const passes = CHECKED[spec.operation](output, expected);
  const [passing, failing] = CHECK_VERDICTS[spec.operation];
  return {
    scorer: 'string_check',
    value: passes ? 1 : 0,
    explanation: `The answer ${passes ? passing : failing} ${quoted(expected)} (\`${spec.operation}\`).`,
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

/** The words of a text, lower-cased, as the ROUGE package tokenises them (punctuation apart). */
const wordsOf = (text: string) => treeBankTokenize(text.toLowerCase().slice(0, MAX_COMPARED_CHARS));

/** How many times each run of `n` words occurs in `words`. */
function nGramCounts(words: readonly string[], n: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i + n <= words.length; i++) {
    const gram = words.slice(i, i + n).join(' ');
    counts.set(gram, (counts.get(gram) ?? 0) + 1);
  }
  return counts;
}

/** The n-grams of `output` also in `expected`, each counted at most as often as `expected` has it. */
function clippedMatches(output: Map<string, number>, expected: Map<string, number>): number {
  let matches = 0;
  for (const [gram, count] of output) matches += Math.min(count, expected.get(gram) ?? 0);
  return matches;
}

const sumOf = (counts: Map<string, number>) => [...counts.values()].reduce((sum, count) => sum + count, 0);
const BLEU_ORDERS = [1, 2, 3, 4];

/**
 * Sentence BLEU-4: the geometric mean of the 1- to 4-gram precisions of the answer against the expected text,
 * times the brevity penalty. The 2- to 4-gram precisions are add-one smoothed (Lin and Och), so a short answer
 * without a matching 4-gram does not score 0.
 */
export function bleu(output: readonly string[], expected: readonly string[]): number {
  if (output.length === 0) return expected.length === 0 ? 1 : 0;
  const logs = BLEU_ORDERS.map((n) => {
    const counts = nGramCounts(output, n);
    const matches = clippedMatches(counts, nGramCounts(expected, n));
    const smoothing = n === 1 ? 0 : 1;
    return Math.log((matches + smoothing) / (sumOf(counts) + smoothing));
  });
  if (!logs.every(Number.isFinite)) return 0;
  const brevity = output.length >= expected.length ? 1 : Math.exp(1 - expected.length / output.length);
  return brevity * Math.exp(logs.reduce((sum, value) => sum + value, 0) / BLEU_ORDERS.length);
}

/** Sentence GLEU (Wu et al., 2016): the lesser of the precision and the recall of all 1- to 4-grams together. */
export function gleu(output: readonly string[], expected: readonly string[]): number {
  let matches = 0;
  let outputTotal = 0;
  let expectedTotal = 0;
  for (const n of BLEU_ORDERS) {
    const outputCounts = nGramCounts(output, n);
    const expectedCounts = nGramCounts(expected, n);
    matches += clippedMatches(outputCounts, expectedCounts);
    outputTotal += sumOf(outputCounts);
    expectedTotal += sumOf(expectedCounts);
  }
  if (outputTotal === 0 || expectedTotal === 0) return outputTotal === expectedTotal ? 1 : 0;
  return Math.min(matches / outputTotal, matches / expectedTotal);
}

/** The metric's value for two texts, from 0 to 1. ROUGE is the F1 of js-rouge, over the whole text as one sentence. */
export function similarityMetric(metric: SimilarityMetric, output: string, expected: string): number {
  const [outputWords, expectedWords] = [wordsOf(output), wordsOf(expected)];
  if (metric === 'bleu') return bleu(outputWords, expectedWords);
  if (metric === 'gleu') return gleu(outputWords, expectedWords);
  if (outputWords.length === 0 || expectedWords.length === 0) return outputWords.length === expectedWords.length ? 1 : 0;
  // Given its words joined by spaces, js-rouge splits them again; the whole text is one sentence for ROUGE-L.
  const [outputText, expectedText] = [outputWords.join(' '), expectedWords.join(' ')];
  const tokenizer = (text: string) => text.split(' ');
  if (metric === 'rouge_l') return rougeL(outputText, expectedText, { tokenizer, segmenter: (text) => [text] });
  return rougeN(outputText, expectedText, { n: Number(metric.slice('rouge_'.length)), tokenizer });
}

export function textSimilarity(spec: Extract<ScorerSpec, { name: 'text_similarity' }>, scored: ScoredCase): Score | null {
  if (!hasExpected(scored.expected)) return null;
  const { expected, output } = comparedTexts(scored.expected, scored.outputText);
  const value = round(similarityMetric(spec.metric, output, expected));
  const verdict =
    spec.threshold === undefined
      ? ''
      : value >= spec.threshold
        ? ` It passes (threshold ${spec.threshold}).`
        : ` It fails (threshold ${spec.threshold}).`;
  return {
    scorer: 'text_similarity',
    value,
    explanation: `The answer's ${spec.metric} against the expected one is ${value} (words, ignoring case).${verdict}`,
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
    case 'string_check':
      return stringCheck(spec, scored);
    case 'fuzzy_match':
      return fuzzyMatch(spec, scored);
    case 'text_similarity':
      return textSimilarity(spec, scored);
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
