import assert from 'node:assert/strict';
import { contentWords, groundedness, heuristicScores, latency, type FinishedRun } from '../../records/run-scorers.js';

const run = (fields: Partial<FinishedRun> = {}): FinishedRun => ({
  status: 'completed',
  durationMs: 1_000,
  outputText: 'An answer.',
  toolCalls: [],
  context: [],
  input: [],
  ...fields,
});

describe('the heuristic scorers', () => {
  it('gives latency full marks up to 5 s, then halves it every 30 s', () => {
    assert.equal(latency(run({ durationMs: 5_000 })).value, 1);
    assert.equal(latency(run({ durationMs: 35_000 })).value, 0.5);
    assert.equal(latency(run({ durationMs: 65_000 })).value, 0.25);
    assert.equal(latency(run({ durationMs: 20_000 })).value, 0.7071);
  });

  it('scores tool_errors as the share of calls without an error, and not at all without calls', () => {
    const scores = heuristicScores(run({ toolCalls: [{ isError: false }, { isError: true }, { isError: false }, { isError: false }] }));
    assert.deepEqual(
      scores.find((s) => s.scorer === 'tool_errors'),
      { scorer: 'tool_errors', value: 0.75, explanation: '3 of 4 tool call(s) succeeded.' },
    );
    assert.equal(
      heuristicScores(run()).find((s) => s.scorer === 'tool_errors'),
      undefined,
    );
  });

  it('scores completion and non_empty from the ending and the answer', () => {
    const failed = heuristicScores(run({ status: 'failed', outputText: '  ' }));
    assert.deepEqual(
      failed.map((s) => [s.scorer, s.value]),
      [
        ['completion', 0],
        ['latency', 1],
        ['non_empty', 0],
      ],
    );
  });

  it('counts content words without stop words, short words or case; numbers count', () => {
    assert.deepEqual([...contentWords('The CEO of Acme is 42, and she says: it was in 2024.')], ['ceo', 'acme', '42', '2024']);
  });

  it('scores groundedness as the share of the answer words found in the context or the question', () => {
    const score = groundedness(
      run({
        outputText: 'Acme bought Globex in 2024 for cash.',
        context: ['Acme acquired Globex in 2024.'],
        input: ['Did Acme pay cash?'],
      }),
    )!;
    assert.equal(score.value, 0.8);
    assert.match(score.explanation, /^4 of 5 content word\(s\).*Not in the context: bought\.$/);
  });

  it('does not score groundedness without context, or without an answer', () => {
    assert.equal(groundedness(run({ context: [] })), null);
    assert.equal(groundedness(run({ context: ['  '] })), null);
    assert.equal(groundedness(run({ outputText: '', context: ['Some context.'] })), null);
  });
});
