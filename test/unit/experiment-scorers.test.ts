import assert from 'node:assert/strict';
import { defaultScorers, exactMatch, scoreRun, unknownScorer } from '../../workflows/experiments/scorer-registry.js';
import { replayMiss } from '../../workflows/runs/replay.js';

describe('experiment scorers', () => {
  const run = { status: 'completed' as const, output: ' 42\n', expected: '42', runScores: new Map() };

  it('matches a string answer exactly once trimmed, and a JSON answer by value whatever its key order', () => {
    assert.equal(exactMatch(run)!.value, 1);
    assert.equal(exactMatch({ ...run, output: '42.' })!.value, 0);
    assert.equal(exactMatch({ output: '{"b": [1, 2], "a": 1}', expected: { a: 1, b: [1, 2] } })!.value, 1);
    assert.equal(exactMatch({ output: '{"a": 2}', expected: { a: 1 } })!.value, 0);
    assert.equal(exactMatch({ output: 'not json', expected: { a: 1 } })!.value, 0);
  });

  it('does not score an item with no expected answer', () => {
    assert.equal(exactMatch({ output: '42', expected: null }), null);
  });

  it("takes the heuristics from the run's own scores, in the order named, by name or by object", () => {
    const completion = { scorer: 'completion', value: 1, explanation: 'The run ended completed.' };
    const scores = scoreRun({ ...run, runScores: new Map([['completion', completion]]) }, [
      { name: 'exact_match' },
      'completion',
      'groundedness',
    ]);
    assert.deepEqual(
      scores.map((s) => [s.scorer, s.value]),
      [
        ['exact_match', 1],
        ['completion', 1],
      ],
    );
  });

  it('names the first scorer it does not know, and defaults to completion with exact_match when items expect answers', () => {
    assert.equal(unknownScorer(['completion', { name: 'astrology' }, 'vibes']), 'astrology');
    assert.equal(unknownScorer(['latency', 'tool_errors', 'non_empty', 'groundedness', 'exact_match']), null);
    assert.deepEqual(defaultScorers(true), ['completion', 'exact_match']);
    assert.deepEqual(defaultScorers(false), ['completion']);
  });

  it('says which call missed in replay, with its arguments cut short past 500 characters', () => {
    const miss = replayMiss({ name: 'lookup', arguments: '{"city":"Bergen"}' });
    assert.equal(miss.code, 'replay_miss');
    assert.match(miss.message, /^The call of lookup with arguments \{"city":"Bergen"\} was not made by the item's source run/);
    const long = replayMiss({ name: 'lookup', arguments: 'x'.repeat(2_000) });
    assert.ok(long.message.includes(`${'x'.repeat(500)}…`));
    assert.ok(!long.message.includes('x'.repeat(501)));
  });
});
