/** A quality report as the Quality view shows it: per scorer (and group), its mean per bucket and its scores in ten bins. */
import type { Schemas } from '../api';
import { groupValue, type Dimension } from './analytics-group';

type QualityBucket = Schemas['QualityPage']['data'][number];

export interface ScorerSeries {
  scorer: string;
  group: string | null;
  /** Per bucket: the mean of its scores, null when it had none. */
  means: (number | null)[];
  count: number;
  mean: number;
  /** Scores in [0, 0.1), [0.1, 0.2), …, [0.9, 1]. */
  distribution: number[];
}

export function qualitySeries(buckets: QualityBucket[], dimension: Dimension | null): { times: number[]; series: ScorerSeries[] } {
  const series = new Map<string, ScorerSeries & { sum: number }>();
  buckets.forEach((bucket, b) => {
    for (const result of bucket.results) {
      const group = dimension ? groupValue(result, dimension) : null;
      const key = JSON.stringify([result.scorer, group]);
      let entry = series.get(key);
      if (!entry) {
        entry = {
          scorer: result.scorer,
          group,
          means: buckets.map(() => null),
          count: 0,
          mean: 0,
          sum: 0,
          distribution: Array.from({ length: 10 }, () => 0),
        };
        series.set(key, entry);
      }
      entry.means[b] = result.mean;
      entry.count += result.count;
      entry.sum += result.mean * result.count;
      result.distribution.forEach((n, bin) => (entry.distribution[bin] = (entry.distribution[bin] ?? 0) + n));
    }
  });
  return {
    times: buckets.map((bucket) => bucket.start_time),
    series: [...series.values()]
      .map(({ sum, ...entry }) => ({ ...entry, mean: entry.count ? sum / entry.count : 0 }))
      .sort((a, b) => a.scorer.localeCompare(b.scorer) || String(a.group).localeCompare(String(b.group))),
  };
}

export const BINS = Array.from({ length: 10 }, (_, i) => `${(i / 10).toFixed(1)}–${((i + 1) / 10).toFixed(1)}`);
