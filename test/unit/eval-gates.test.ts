import assert from 'node:assert/strict';
import { checkGates, GateSyntaxError, needsBaseline, parseGate, type GateInputs } from '../../cli/eval-gates.js';

const inputs: GateInputs = {
  summary: {
    scores: { accuracy: { mean: 0.75, count: 4 }, unscored: { mean: null, count: 0 } },
    cost_usd: '0.080000',
    latency_ms: { mean: 1_200, p50: 1_000, p95: 2_500 },
  },
  completed: 4,
  comparison: [{ metric: 'accuracy', difference: { mean: -0.1, ci_low: -0.3, ci_high: 0.05 } }],
};

describe('the gates of agentplane eval', () => {
  it('reads a scorer, the total or mean cost, and a latency percentile', () => {
    assert.deepEqual(parseGate(' accuracy < 0.8 '), {
      text: 'accuracy < 0.8',
      metric: 'accuracy',
      figure: 'mean',
      operator: '<',
      threshold: 0.8,
    });
    assert.equal(parseGate('cost_usd > 0.05').figure, 'total');
    assert.equal(parseGate('cost_usd.mean > 0.05').figure, 'mean');
    assert.deepEqual(parseGate('latency_ms.p95>2000'), {
      text: 'latency_ms.p95>2000',
      metric: 'latency_ms',
      figure: 'p95',
      operator: '>',
      threshold: 2000,
    });
    assert.ok(needsBaseline(parseGate('accuracy.difference < -0.05')));
  });

  it('refuses a gate it cannot read, saying what it expects', () => {
    assert.throws(() => parseGate('accuracy is low'), GateSyntaxError);
    assert.throws(() => parseGate('accuracy = 1'), /one of <, <=, >, >=/);
    assert.throws(() => parseGate('accuracy.p95 > 1'), /only for latency_ms/);
    assert.throws(() => parseGate('latency_ms.median > 1'), /is not one of/);
  });

  it('fails a gate whose condition holds, or that has no value to check', () => {
    const results = checkGates(
      [
        'accuracy < 0.8',
        'accuracy < 0.7',
        'cost_usd > 0.05',
        'cost_usd.mean > 0.05',
        'latency_ms.p95 >= 2500',
        'unscored < 0.5',
        'missing < 0.5',
      ].map(parseGate),
      inputs,
    );
    assert.deepEqual(
      results.map((r) => [r.gate, r.value, r.failed]),
      [
        ['accuracy < 0.8', 0.75, true],
        ['accuracy < 0.7', 0.75, false],
        ['cost_usd > 0.05', 0.08, true],
        ['cost_usd.mean > 0.05', 0.02, false],
        ['latency_ms.p95 >= 2500', 2_500, true],
        ['unscored < 0.5', null, true],
        ['missing < 0.5', null, true],
      ],
    );
  });

  it('reads a comparison figure from the baseline comparison', () => {
    const results = checkGates(['accuracy.difference < -0.05', 'accuracy.ci_high < 0', 'cost_usd.difference > 0'].map(parseGate), inputs);
    assert.deepEqual(
      results.map((r) => [r.value, r.failed]),
      [
        [-0.1, true],
        [0.05, false],
        [null, true],
      ],
    );
  });
});
