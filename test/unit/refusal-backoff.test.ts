import assert from 'node:assert/strict';
import { FIRST_REFUSAL_WAIT_MS, waitAfterRefusal } from '../../workflows/refusal-backoff.js';

describe('the waits of a call refused for its share of the slots', () => {
  it('doubles after each refusal in a row, up to a minute', () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6, 7, 20].map((refusals) => waitAfterRefusal(refusals, 1)),
      [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000],
    );
    assert.equal(waitAfterRefusal(0, 1), FIRST_REFUSAL_WAIT_MS);
  });

  it('spreads calls refused together over the second half of each wait', () => {
    assert.equal(waitAfterRefusal(3, 0), 4_000);
    assert.equal(waitAfterRefusal(3, 0.5), 6_000);
    assert.equal(waitAfterRefusal(6, 0), 30_000);
  });

  it('waits as many times longer as the worker asks, up to a minute, and never less than its usual wait', () => {
    assert.equal(waitAfterRefusal(0, 1, 5), 5_000);
    assert.equal(waitAfterRefusal(2, 0, 2.5), 5_000);
    assert.equal(waitAfterRefusal(3, 1, 20), 60_000);
    assert.equal(waitAfterRefusal(1, 1, 0.2), 2_000);
  });
});
