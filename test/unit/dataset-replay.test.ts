import assert from 'node:assert/strict';
import { canonicalArguments, replayAnswer, type ToolCallSnapshot } from '../../records/datasets.js';

const snapshot: ToolCallSnapshot[] = [
  { tool: 'weather', arguments: '{"city":"Oslo","units":"metric"}', content: 'Rain, 7 °C', is_error: false },
  { tool: 'weather', arguments: '{"city":"Bergen"}', content: 'Rain, 9 °C', is_error: false },
  { tool: 'weather', arguments: '{"city":"Oslo","units":"metric"}', content: 'Sleet, 2 °C', is_error: false },
  { tool: 'search', arguments: 'not json', content: 'upstream timed out', is_error: true },
];

describe('replay answers from a run snapshot', () => {
  it('matches the same arguments written with other key order and spacing', () => {
    assert.equal(canonicalArguments('{ "units": "metric",  "city": "Oslo" }'), canonicalArguments('{"city":"Oslo","units":"metric"}'));
    assert.equal(canonicalArguments('{"a":{"z":1,"b":[{"y":2,"c":3}]}}'), '{"a":{"b":[{"c":3,"y":2}],"z":1}}');
  });

  it('compares arguments that do not parse as written', () => {
    assert.equal(canonicalArguments('not json'), 'not json');
    assert.deepEqual(replayAnswer(snapshot, { name: 'search', arguments: 'not json' }, new Set()), {
      index: 3,
      content: 'upstream timed out',
      is_error: true,
    });
  });

  it('gives repeated calls the recorded answers in order, then the last one again', () => {
    const call = { name: 'weather', arguments: '{"units":"metric","city":"Oslo"}' };
    assert.equal(replayAnswer(snapshot, call, new Set())?.content, 'Rain, 7 °C');
    assert.equal(replayAnswer(snapshot, call, new Set([0]))?.content, 'Sleet, 2 °C');
    assert.equal(replayAnswer(snapshot, call, new Set([0, 2]))?.content, 'Sleet, 2 °C');
  });

  it('misses a call of another tool or with other arguments', () => {
    assert.equal(replayAnswer(snapshot, { name: 'weather', arguments: '{"city":"Tromsø"}' }, new Set()), null);
    assert.equal(replayAnswer(snapshot, { name: 'forecast', arguments: '{"city":"Oslo","units":"metric"}' }, new Set()), null);
    assert.equal(replayAnswer(snapshot, { name: 'weather', arguments: '{"city":"Oslo"}' }, new Set()), null);
  });
});
