/**
 * How one experiment compares with a baseline on the same dataset: per metric (each scorer both have, cost and
 * latency), both means, and the mean difference over the items both ran, paired by dataset item, with a 95%
 * paired-bootstrap interval. Pure: the same items always give the same answer, interval included, because the
 * resampling is seeded from the two experiments' ids and the metric.
 */

/** One finished item of an experiment, as the comparison reads it. */
export interface ComparedItem {
  dataset_item_id: string;
  run_id: string | null;
  /** Scorer name to value; a scorer that did not score the item is absent. */
  scores: Record<string, number>;
  cost_usd: number | null;
  latency_ms: number | null;
}

export interface ChangedItem {
  dataset_item_id: string;
  baseline_run_id: string | null;
  experiment_run_id: string | null;
  baseline: number;
  experiment: number;
  difference: number;
}

export interface MetricComparison {
  metric: string;
  kind: 'score' | 'cost_usd' | 'latency_ms';
  baseline: { mean: number | null; count: number };
  experiment: { mean: number | null; count: number };
  /** Experiment minus baseline, over the pairs; null bounds when there is no pair. */
  difference: { mean: number | null; ci_low: number | null; ci_high: number | null; pairs: number; resamples: number };
  /** The pairs whose difference is largest in size, largest first; pairs that did not change are left out. */
  changed: ChangedItem[];
}

export interface ComparisonOptions {
  /** Mixed into the seed: the two experiments' ids, so the same pair of experiments always gets the same intervals. */
  seed: string;
  /** How many changed items to keep per metric. */
  top: number;
  /** Resamples of the item pairs; fewer are drawn when there are very many pairs (`resamplesFor`). */
  resamples?: number;
}

export const CONFIDENCE = 0.95;
export const RESAMPLES = 10_000;
/** Resamples times pairs stays under this, so a metric costs at most a few hundred milliseconds however large the dataset. */
const RESAMPLE_WORK = 20_000_000;
const MIN_RESAMPLES = 1_000;

/** How many resamples a metric with `pairs` pairs draws: 10,000 up to 2,000 pairs, then fewer, never under 1,000. */
export function resamplesFor(pairs: number, wanted = RESAMPLES): number {
  if (pairs === 0) return 0;
  return Math.max(Math.min(wanted, MIN_RESAMPLES), Math.min(wanted, Math.floor(RESAMPLE_WORK / pairs)));
}

/** The metrics both sides can be compared on: each scorer found on both sides' items (by name), then cost and latency. */
export function comparedMetrics(
  baseline: ComparedItem[],
  experiment: ComparedItem[],
): { metric: string; kind: MetricComparison['kind'] }[] {
  const scorersOf = (items: ComparedItem[]) => new Set(items.flatMap((item) => Object.keys(item.scores)));
  const theirs = scorersOf(experiment);
  const shared = [...scorersOf(baseline)].filter((name) => theirs.has(name)).sort();
  return [
    ...shared.map((metric) => ({ metric, kind: 'score' as const })),
    { metric: 'cost_usd', kind: 'cost_usd' as const },
    { metric: 'latency_ms', kind: 'latency_ms' as const },
  ];
}

export function compareExperiments(baseline: ComparedItem[], experiment: ComparedItem[], options: ComparisonOptions): MetricComparison[] {
  const theirs = new Map(experiment.map((item) => [item.dataset_item_id, item]));
  const pairs = baseline.flatMap((item) => {
    const other = theirs.get(item.dataset_item_id);
    return other ? [{ baseline: item, experiment: other }] : [];
  });
  return comparedMetrics(baseline, experiment).map(({ metric, kind }) => {
    const valueOf = (item: ComparedItem): number | undefined =>
      kind === 'score' ? item.scores[metric] : ((kind === 'cost_usd' ? item.cost_usd : item.latency_ms) ?? undefined);
    const measured = pairs.flatMap((pair) => {
      const before = valueOf(pair.baseline);
      const after = valueOf(pair.experiment);
      return before === undefined || after === undefined ? [] : [{ ...pair, before, after, difference: after - before }];
    });
    const differences = measured.map((pair) => pair.difference);
    const interval = bootstrapInterval(differences, `${options.seed}/${metric}`, options.resamples);
    return {
      metric,
      kind,
      baseline: meanOf(baseline.map(valueOf)),
      experiment: meanOf(experiment.map(valueOf)),
      difference: {
        mean: differences.length ? mean(differences) : null,
        ci_low: interval?.low ?? null,
        ci_high: interval?.high ?? null,
        pairs: measured.length,
        resamples: resamplesFor(measured.length, options.resamples),
      },
      changed: measured
        .filter((pair) => pair.difference !== 0)
        .sort(
          (a, b) => Math.abs(b.difference) - Math.abs(a.difference) || a.baseline.dataset_item_id.localeCompare(b.baseline.dataset_item_id),
        )
        .slice(0, options.top)
        .map((pair) => ({
          dataset_item_id: pair.baseline.dataset_item_id,
          baseline_run_id: pair.baseline.run_id,
          experiment_run_id: pair.experiment.run_id,
          baseline: pair.before,
          experiment: pair.after,
          difference: pair.difference,
        })),
    };
  });
}

/**
 * The 95% percentile interval of the mean of `values`, by resampling them with replacement: each resample draws
 * as many values as there are, and the interval is the 2.5th and 97.5th percentiles of the resamples' means.
 * Null for no values. Values that are all equal give an interval of zero width at that value.
 */
export function bootstrapInterval(values: number[], seed: string, wanted = RESAMPLES): { low: number; high: number } | null {
  const n = values.length;
  if (n === 0) return null;
  const resamples = resamplesFor(n, wanted);
  const random = seededRandom(seed);
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += values[Math.floor(random() * n)]!;
    means[r] = sum / n;
  }
  means.sort();
  const tail = (1 - CONFIDENCE) / 2;
  return { low: percentile(means, tail), high: percentile(means, 1 - tail) };
}

/** The `p` quantile of sorted values, interpolating between the two nearest (as R's type 7 and NumPy's default). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  const at = (sorted.length - 1) * p;
  const below = Math.floor(at);
  const above = Math.min(below + 1, sorted.length - 1);
  const lower = sorted[below]!;
  const upper = sorted[above]!;
  return lower === upper ? lower : lower + (upper - lower) * (at - below);
}

/** A uniform generator on [0, 1) from a text seed: FNV-1a of the text, then mulberry32. */
export function seededRandom(seed: string): () => number {
  let state = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) state = Math.imul(state ^ seed.charCodeAt(i), 0x01000193) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function mean(values: number[]): number {
  let sum = 0;
  for (const value of values) sum += value;
  return sum / values.length;
}

function meanOf(values: (number | undefined)[]): { mean: number | null; count: number } {
  const present = values.filter((value): value is number => value !== undefined);
  return { mean: present.length ? mean(present) : null, count: present.length };
}
