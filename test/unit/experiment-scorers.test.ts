import assert from 'node:assert/strict';
import { checkScorerSpecs, defaultScorers, MAX_SCORERS, storedScorers } from '../../workflows/experiments/scorer-specs.js';
import {
  claimsOf,
  exactMatch,
  faithfulness,
  fuzzyMatch,
  bleu,
  gleu,
  judgeQuestion,
  judgeScore,
  jsonSchemaMatch,
  scoreCase,
  similarity,
  similarityMetric,
  stringCheck,
  textSimilarity,
  type ScoredCase,
} from '../../workflows/experiments/scorers.js';
import type { FinishedRun } from '../../records/run-scorers.js';
import { replayMiss } from '../../workflows/runs/replay.js';

const scored = (fields: Partial<ScoredCase> = {}): ScoredCase => ({ expected: 'Paris', outputText: 'Paris', citations: [], ...fields });
const run: FinishedRun = { status: 'completed', durationMs: 1_000, outputText: 'Paris', toolCalls: [], context: [], input: [] };

describe('scorer specs', () => {
  it('takes names and objects, and fills in the defaults', () => {
    const checked = checkScorerSpecs([
      'completion',
      { name: 'exact_match', case_sensitive: false },
      { name: 'fuzzy_match', threshold: 0.8 },
    ]);
    assert.deepEqual(checked, {
      ok: true,
      specs: [{ name: 'completion' }, { name: 'exact_match', case_sensitive: false, trim: true }, { name: 'fuzzy_match', threshold: 0.8 }],
    });
  });

  it('refuses, naming where: an unknown scorer, an unknown option, a threshold out of range, a judge without rubric, a repeat, too many', () => {
    const problem = (value: unknown) => {
      const checked = checkScorerSpecs(value);
      assert.equal(checked.ok, false);
      return checked.ok ? null : [checked.code, checked.param, checked.problem];
    };
    assert.deepEqual(problem(['bleu'])?.slice(0, 2), ['invalid_scorer', 'scorers.0.name']);
    assert.deepEqual(problem([{ name: 'exact_match', threshold: 1 }]), [
      'invalid_scorer',
      'scorers.0.threshold',
      'The exact_match scorer takes `case_sensitive`, `trim`, not `threshold`.',
    ]);
    assert.deepEqual(problem([{ name: 'fuzzy_match', threshold: 1.5 }])?.slice(0, 2), ['invalid_scorer', 'scorers.0.threshold']);
    assert.deepEqual(problem(['judge'])?.slice(0, 2), ['invalid_scorer', 'scorers.0.rubric']);
    assert.deepEqual(problem(['latency', { name: 'latency' }])?.slice(0, 2), ['duplicate_scorer', 'scorers.1']);
    assert.deepEqual(problem(Array.from({ length: MAX_SCORERS + 1 }, () => 'latency'))?.slice(0, 2), ['invalid_scorer', 'scorers']);
  });

  it('takes string_check with an operation and text_similarity with a metric, and refuses any other', () => {
    assert.deepEqual(
      checkScorerSpecs([
        { name: 'string_check', operation: 'ilike' },
        { name: 'text_similarity', metric: 'rouge_l', threshold: 0.5 },
      ]),
      {
        ok: true,
        specs: [
          { name: 'string_check', operation: 'ilike' },
          { name: 'text_similarity', metric: 'rouge_l', threshold: 0.5 },
        ],
      },
    );
    const problem = (value: unknown) => {
      const checked = checkScorerSpecs([value]);
      return checked.ok ? null : [checked.code, checked.param, checked.problem];
    };
    assert.deepEqual(problem({ name: 'string_check' }), [
      'invalid_scorer',
      'scorers.0.operation',
      '`scorers.0.operation` must be one of eq, ne, like, ilike.',
    ]);
    assert.deepEqual(problem({ name: 'text_similarity', metric: 'cosine' }), [
      'invalid_scorer',
      'scorers.0.metric',
      '`scorers.0.metric` must be one of bleu, gleu, rouge_1, rouge_2, rouge_3, rouge_4, rouge_5, rouge_l.',
    ]);
    assert.deepEqual(problem({ name: 'text_similarity', metric: 'bleu', threshold: -1 })?.slice(0, 2), [
      'invalid_scorer',
      'scorers.0.threshold',
    ]);
  });

  it('compiles a json_schema scorer with the tool-schema machinery: a backreference or a deep schema is refused', () => {
    const bad = checkScorerSpecs([{ name: 'json_schema', schema: { type: 'string', pattern: '(a)\\1' } }]);
    assert.equal(bad.ok, false);
    assert.match(bad.ok ? '' : bad.problem, /is not supported \(patterns are matched in linear time/);
    let deep: Record<string, unknown> = { type: 'object' };
    for (let n = 0; n < 40; n++) deep = { type: 'object', properties: { a: deep } };
    const tooDeep = checkScorerSpecs([{ name: 'json_schema', schema: deep }]);
    assert.match(tooDeep.ok ? '' : tooDeep.problem, /deeper than 32 levels/);
    const endless = checkScorerSpecs([{ name: 'json_schema', schema: { not: { $ref: '#' } } }]);
    assert.match(endless.ok ? '' : endless.problem, /refers to itself without end/);
  });
});

describe("an experiment's scorers", () => {
  it('default to completion, with exact_match when items expect answers, in their normal form', () => {
    assert.deepEqual(defaultScorers(true), [{ name: 'completion' }, { name: 'exact_match', case_sensitive: true, trim: true }]);
    assert.deepEqual(defaultScorers(false), [{ name: 'completion' }]);
  });

  it('read as stored: names alone in their normal form, and a scorer that no longer checks left out', () => {
    assert.deepEqual(storedScorers(['completion', { name: 'exact_match' }, { name: 'astrology' }, { name: 'judge', rubric: 'Kind?' }]), [
      { name: 'completion' },
      { name: 'exact_match', case_sensitive: true, trim: true },
      { name: 'judge', rubric: 'Kind?' },
    ]);
    assert.deepEqual(storedScorers(null), []);
  });

  it('say which call missed in replay, with its arguments cut short past 500 characters', () => {
    const miss = replayMiss({ name: 'lookup', arguments: '{"city":"Bergen"}' });
    assert.equal(miss.code, 'replay_miss');
    assert.match(miss.message, /^The call of lookup with arguments \{"city":"Bergen"\} was not made by the item's source run/);
    const long = replayMiss({ name: 'lookup', arguments: 'x'.repeat(2_000) });
    assert.ok(long.message.includes(`${'x'.repeat(500)}…`));
    assert.ok(!long.message.includes('x'.repeat(501)));
  });
});

describe('the output scorers', () => {
  it('exact_match compares trimmed text, case by default, and a non-string expected as canonical JSON', () => {
    const spec = { name: 'exact_match', case_sensitive: true, trim: true } as const;
    assert.equal(exactMatch(spec, scored({ outputText: ' Paris\n' }))?.value, 1);
    assert.equal(exactMatch(spec, scored({ outputText: 'paris' }))?.value, 0);
    assert.equal(exactMatch({ ...spec, case_sensitive: false }, scored({ outputText: 'PARIS' }))?.value, 1);
    assert.equal(exactMatch(spec, scored({ expected: { b: [1, 2], a: 'x' }, outputText: '{"a": "x", "b": [1,2]}' }))?.value, 1);
    assert.equal(exactMatch(spec, scored({ expected: 42, outputText: '42.0' }))?.value, 1);
    assert.equal(exactMatch(spec, scored({ expected: null })), null, 'nothing to compare with');
  });

  it('fuzzy_match scores the similarity and says whether it passes the threshold', () => {
    assert.equal(similarity('kitten', 'sitting'), 1 - 3 / 7);
    const near = fuzzyMatch(
      { name: 'fuzzy_match', threshold: 0.8 },
      scored({ expected: 'The capital is Paris.', outputText: 'the capital is  paris' }),
    );
    assert.equal(near?.value, 0.9524);
    assert.match(near!.explanation, /It passes \(threshold 0.8\)\./);
    const far = fuzzyMatch({ name: 'fuzzy_match', threshold: 0.8 }, scored({ expected: 'Paris', outputText: 'Lyon' }));
    assert.match(far!.explanation, /It fails/);
    assert.equal(fuzzyMatch({ name: 'fuzzy_match' }, scored({ expected: undefined })), null);
  });

  it('string_check compares the texts as written: eq, ne, like (contains), ilike (contains, ignoring case)', () => {
    const check = (operation: 'eq' | 'ne' | 'like' | 'ilike', outputText: string) =>
      stringCheck({ name: 'string_check', operation }, scored({ expected: 'Paris', outputText }))?.value;
    assert.deepEqual(
      ['Paris', 'Paris ', 'It is Paris.', 'It is PARIS.'].map((output) => [
        check('eq', output),
        check('ne', output),
        check('like', output),
        check('ilike', output),
      ]),
      [
        [1, 0, 1, 1],
        [0, 1, 1, 1],
        [0, 1, 1, 1],
        [0, 1, 0, 1],
      ],
    );
    // `%` and `_` are text like any other: an answer holds the reference as written, or does not.
    assert.equal(
      stringCheck({ name: 'string_check', operation: 'like' }, scored({ expected: '50%', outputText: 'It is 50% off' }))?.value,
      1,
    );
    assert.equal(stringCheck({ name: 'string_check', operation: 'like' }, scored({ expected: 'P%s', outputText: 'Paris' }))?.value, 0);
    assert.equal(
      stringCheck({ name: 'string_check', operation: 'ne' }, scored({ expected: 'Paris' }))?.explanation,
      'The answer is, and must not be, "Paris" (`ne`).',
    );
    assert.equal(stringCheck({ name: 'string_check', operation: 'eq' }, scored({ expected: undefined })), null);
  });

  it('text_similarity scores BLEU, GLEU and ROUGE on words ignoring case, and says whether it passes the threshold', () => {
    const [answer, expected] = ['The cat sat on the mat.', 'the cat is on the mat.'];
    // Tokens: "the cat sat on the mat ." against "the cat is on the mat .": 6 of 7 words, 4 of 6 bigrams,
    // 2 of 5 trigrams, 1 of 4 four-grams in common; the longest common subsequence has 6 words.
    assert.equal(similarityMetric('rouge_1', answer, expected), 6 / 7);
    assert.equal(similarityMetric('rouge_2', answer, expected), 4 / 6);
    assert.equal(similarityMetric('rouge_3', answer, expected), 2 / 5);
    assert.equal(similarityMetric('rouge_5', answer, expected), 0);
    assert.equal(similarityMetric('rouge_l', answer, expected), 6 / 7);
    assert.ok(Math.abs(similarityMetric('bleu', answer, expected) - ((6 / 7) * (5 / 7) * (3 / 6) * (2 / 5)) ** 0.25) < 1e-12);
    assert.equal(similarityMetric('gleu', answer, expected), (6 + 4 + 2 + 1) / (7 + 6 + 5 + 4));
    for (const metric of ['bleu', 'gleu', 'rouge_1', 'rouge_l'] as const) {
      assert.equal(similarityMetric(metric, expected, expected), 1, metric);
      assert.equal(similarityMetric(metric, 'Lyon', expected), 0, metric);
    }
    // A short answer is penalised for brevity; one word shares no bigram yet does not score 0 for it.
    assert.equal(bleu(['the'], ['the', 'cat']), Math.exp(1 - 2));
    assert.equal(gleu([], []), 1);
    const passes = textSimilarity({ name: 'text_similarity', metric: 'rouge_1', threshold: 0.8 }, scored({ expected, outputText: answer }));
    assert.equal(passes?.value, 0.8571);
    assert.equal(
      passes?.explanation,
      "The answer's rouge_1 against the expected one is 0.8571 (words, ignoring case). It passes (threshold 0.8).",
    );
    const fails = textSimilarity({ name: 'text_similarity', metric: 'rouge_2', threshold: 0.8 }, scored({ expected, outputText: answer }));
    assert.match(fails!.explanation, /It fails \(threshold 0.8\)\./);
    assert.equal(textSimilarity({ name: 'text_similarity', metric: 'bleu' }, scored({ expected: null })), null);
  });

  it('json_schema scores JSON answers (fenced or not) against the schema, and says what is wrong', () => {
    const spec = {
      name: 'json_schema',
      schema: { type: 'object', required: ['total'], properties: { total: { type: 'number' } } },
    } as const;
    assert.equal(jsonSchemaMatch(spec, scored({ outputText: '```json\n{"total": 42}\n```' })).value, 1);
    const wrong = jsonSchemaMatch(spec, scored({ outputText: '{"total": "42"}' }));
    assert.equal(wrong.value, 0);
    assert.match(wrong.explanation, /answer\/total must be number/);
    assert.equal(jsonSchemaMatch(spec, scored({ outputText: 'Forty-two.' })).explanation, 'The answer is not JSON.');
    // An answer that leads the schema back into itself without end scores 0, saying so, rather than failing the scoring.
    const someAnswers = { name: 'json_schema', schema: { type: 'object', dependentSchemas: { loop: { $ref: '#' } } } } as const;
    const endless = jsonSchemaMatch(someAnswers, scored({ outputText: '{"loop": true}' }));
    assert.equal(endless.value, 0);
    assert.match(endless.explanation, /answer could not be checked: the check went deeper than the call stack allows/);
  });

  it('faithfulness counts the claims a cited passage supports and names the others; without citations, no score', () => {
    const answer = 'The warranty lasts two years. Returns are accepted within 30 days. Shipping to Mars is free.';
    assert.deepEqual(claimsOf(answer).length, 3);
    const score = faithfulness(
      scored({
        outputText: answer,
        citations: ['Every product carries a warranty that lasts two years.', 'Returns are accepted within 30 days of delivery.'],
      }),
    );
    assert.equal(score?.value, 0.6667);
    assert.match(score!.explanation, /^2 of 3 claim\(s\) .* Unsupported: "Shipping to Mars is free\."\.$/);
    assert.equal(faithfulness(scored({ outputText: answer })), null);
  });

  it('asks the judge with the rubric and reads a verdict from 0 to 1, or none', () => {
    const question = judgeQuestion(
      { name: 'judge', rubric: 'Polite and correct.' },
      { ...scored({ outputText: 'It is Paris.' }), input: ['What is the capital of France?'] },
    );
    assert.match(question.instructions, /Rubric:\nPolite and correct\.$/);
    assert.match(question.prompt, /^Request:\nWhat is the capital of France\?\n\nExpected answer:\nParis\n\nAnswer:\nIt is Paris\.$/);
    assert.deepEqual(judgeScore({ score: 0.75, rationale: 'Right, curt.' }), { scorer: 'judge', value: 0.75, explanation: 'Right, curt.' });
    assert.equal(judgeScore({ score: 7 }), null);
    assert.equal(judgeScore('yes'), null);
  });

  it('scores a case by its spec, heuristics from the finished run, and leaves the judge to the caller', () => {
    assert.equal(scoreCase({ name: 'completion' }, scored(), run)?.value, 1);
    assert.equal(scoreCase({ name: 'exact_match', case_sensitive: true, trim: true }, scored(), run)?.value, 1);
    assert.equal(scoreCase({ name: 'tool_errors' }, scored(), run), null);
    assert.equal(scoreCase({ name: 'judge', rubric: 'x' }, scored(), run), null);
  });
});
