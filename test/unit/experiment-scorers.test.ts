import assert from 'node:assert/strict';
import { checkScorerSpecs, defaultScorers, MAX_SCORERS, storedScorers } from '../../workflows/experiments/scorer-specs.js';
import {
  claimsOf,
  exactMatch,
  faithfulness,
  fuzzyMatch,
  judgeQuestion,
  judgeScore,
  jsonSchemaMatch,
  scoreCase,
  similarity,
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

  it('compiles a json_schema scorer with the tool-schema machinery: a backreference or a deep schema is refused', () => {
    const bad = checkScorerSpecs([{ name: 'json_schema', schema: { type: 'string', pattern: '(a)\\1' } }]);
    assert.equal(bad.ok, false);
    assert.match(bad.ok ? '' : bad.problem, /is not supported \(patterns are matched in linear time/);
    let deep: Record<string, unknown> = { type: 'object' };
    for (let n = 0; n < 40; n++) deep = { type: 'object', properties: { a: deep } };
    const tooDeep = checkScorerSpecs([{ name: 'json_schema', schema: deep }]);
    assert.match(tooDeep.ok ? '' : tooDeep.problem, /deeper than 32 levels/);
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
