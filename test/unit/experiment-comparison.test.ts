import assert from 'node:assert/strict';
import {
  bootstrapInterval,
  compareExperiments,
  percentile,
  resamplesFor,
  seededRandom,
  type ComparedItem,
} from '../../records/experiment-comparison.js';

const item = (id: string, scores: Record<string, number>, cost: number | null = 0.01, latency: number | null = 1_000): ComparedItem => ({
  dataset_item_id: id,
  run_id: `run_${id}`,
  scores,
  cost_usd: cost,
  latency_ms: latency,
});

describe('comparing an experiment with a baseline', () => {
  it('gives a constant difference an interval of zero width at that difference', () => {
    const interval = bootstrapInterval([0.25, 0.25, 0.25, 0.25, 0.25], 'seed');
    assert.deepEqual(interval, { low: 0.25, high: 0.25 });
  });

  it('gives the same interval for the same inputs, and another for another seed', () => {
    const values = [0.1, -0.3, 0.5, 0.2, 0, 0.4, -0.1, 0.3];
    assert.deepEqual(bootstrapInterval(values, 'exp_a/exp_b/accuracy'), bootstrapInterval(values, 'exp_a/exp_b/accuracy'));
    assert.notDeepEqual(bootstrapInterval(values, 'exp_a/exp_b/accuracy'), bootstrapInterval(values, 'exp_a/exp_c/accuracy'));
  });

  it('finds the true mean inside the interval of a sample drawn around it, and an interval as wide as the theory says', () => {
    // 400 draws of a uniform on [0, 1): true mean 0.5, standard error sqrt(1/12/400) ≈ 0.0144, so a 95% interval ≈ ±0.028.
    const draw = seededRandom('sample');
    const values = Array.from({ length: 400 }, () => draw());
    const interval = bootstrapInterval(values, 'interval')!;
    assert.ok(interval.low < 0.5 && 0.5 < interval.high, `${interval.low}..${interval.high}`);
    const width = interval.high - interval.low;
    assert.ok(width > 0.045 && width < 0.068, `width ${width}`);
  });

  it('has no interval without values', () => {
    assert.equal(bootstrapInterval([], 'seed'), null);
  });

  it('takes percentiles between the nearest values, as NumPy does', () => {
    assert.equal(percentile([1, 2, 3, 4, 5], 0.5), 3);
    assert.equal(percentile([1, 2, 3, 4], 0.5), 2.5);
    assert.equal(percentile([0, 10], 0.025), 0.25);
  });

  it('draws 10,000 resamples up to 2,000 pairs, and fewer (never under 1,000) past that', () => {
    assert.equal(resamplesFor(5), 10_000);
    assert.equal(resamplesFor(2_000), 10_000);
    assert.equal(resamplesFor(4_000), 5_000);
    assert.equal(resamplesFor(100_000), 1_000);
    assert.equal(resamplesFor(0), 0);
  });

  it('pairs items by dataset item, compares each shared scorer, cost and latency, and leaves out items missing a value', () => {
    const baseline = [
      item('a', { accuracy: 0.5, fluency: 1 }, 0.01, 1_000),
      item('b', { accuracy: 1 }, 0.02, 2_000),
      item('c', { accuracy: 0 }, null, 3_000),
      item('only_baseline', { accuracy: 1 }, 0.01, 500),
    ];
    const experiment = [
      item('a', { accuracy: 1 }, 0.02, 1_500),
      item('b', { accuracy: 1 }, 0.01, 1_000),
      item('c', { accuracy: 1 }, 0.03, 3_000),
    ];
    const metrics = compareExperiments(baseline, experiment, { seed: 'exp_a/exp_b', top: 5 });
    assert.deepEqual(
      metrics.map((m) => [m.metric, m.kind]),
      [
        ['accuracy', 'score'],
        ['cost_usd', 'cost_usd'],
        ['latency_ms', 'latency_ms'],
      ],
    );
    const accuracy = metrics[0]!;
    assert.deepEqual(accuracy.baseline, { mean: 0.625, count: 4 });
    assert.deepEqual(accuracy.experiment, { mean: 1, count: 3 });
    assert.equal(accuracy.difference.pairs, 3);
    assert.equal(accuracy.difference.mean, 0.5);
    assert.ok(accuracy.difference.ci_low! >= 0 && accuracy.difference.ci_high! <= 1);
    assert.deepEqual(accuracy.changed, [
      { dataset_item_id: 'c', baseline_run_id: 'run_c', experiment_run_id: 'run_c', baseline: 0, experiment: 1, difference: 1 },
      { dataset_item_id: 'a', baseline_run_id: 'run_a', experiment_run_id: 'run_a', baseline: 0.5, experiment: 1, difference: 0.5 },
    ]);
    const cost = metrics[1]!;
    assert.equal(cost.difference.pairs, 2, 'item c has no baseline cost');
    const latency = metrics[2]!;
    assert.equal(latency.difference.pairs, 3);
    assert.equal(latency.difference.mean, -500 / 3);
    assert.deepEqual(
      latency.changed.map((c) => [c.dataset_item_id, c.difference]),
      [
        ['b', -1_000],
        ['a', 500],
      ],
    );
  });

  it('keeps only the top changed items, and answers null means and bounds when nothing pairs', () => {
    const baseline = ['i0', 'i1', 'i2', 'i3', 'i4'].map((id) => item(id, { accuracy: 0.5 }));
    const experiment = [0.5, 0.75, 0, 1, 0.25].map((value, i) => item(`i${i}`, { accuracy: value }));
    const changedIds = (top: number) =>
      compareExperiments(baseline, experiment, { seed: 's', top })[0]!.changed.map((c) => c.dataset_item_id);
    assert.deepEqual(changedIds(2), ['i2', 'i3'], 'equal sizes in dataset item order');
    assert.deepEqual(changedIds(50), ['i2', 'i3', 'i1', 'i4'], 'the unchanged item is left out');
    const [cost] = compareExperiments([item('x', {})], [item('y', {})], { seed: 's', top: 2 });
    assert.deepEqual(cost!.difference, { mean: null, ci_low: null, ci_high: null, pairs: 0, resamples: 0 });
    assert.deepEqual(cost!.baseline, { mean: 0.01, count: 1 });
  });
});
