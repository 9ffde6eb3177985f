/** The quality report's page of buckets, and a backfill, as the API shows them. */
import type { components } from '../api/generated/openapi.js';
import type { Grouping } from '../records/analytics-selection.js';
import type { QualityCell } from '../records/quality-analytics.js';
import type { QualityBackfillRecord } from '../records/quality-backfills.js';
import { unixSeconds } from './time.js';

type QualityPage = components['schemas']['QualityPage'];
type QualityResult = components['schemas']['QualityResult'];
type QualityBackfill = components['schemas']['QualityBackfill'];

// The built-in scorers first, in this order; people's after them, by name.
const SCORER_ORDER = ['completion', 'latency', 'tool_errors', 'non_empty', 'groundedness', 'judge'];
const rank = (scorer: string) => (SCORER_ORDER.includes(scorer) ? SCORER_ORDER.indexOf(scorer) : SCORER_ORDER.length);

function resultOf(scorer: string, groupBy: Grouping[], groups: (string | null)[]): QualityResult {
  const result: QualityResult = { object: 'quality.result', scorer, mean: 0, count: 0, distribution: Array<number>(10).fill(0) };
  groupBy.forEach((grouping, i) => {
    if ('column' in grouping) result[grouping.column] = groups[i] ?? null;
    else result.metadata = { ...result.metadata, [grouping.metadataKey]: groups[i] ?? null };
  });
  return result;
}

/** Each bucket of the page with one result per scorer and group that has scores in it. */
export function presentQualityPage(page: { buckets: { start: number; end: number }[]; nextPage: string | null; groupBy: Grouping[]; origin: number; bucketSeconds: number }, cells: QualityCell[]): QualityPage {
  const data = page.buckets.map((bucket) => {
    const index = Math.round((bucket.start - page.origin) / page.bucketSeconds);
    const results = new Map<string, QualityResult & { sum: number }>();
    for (const cell of cells.filter((c) => c.bucket === index)) {
      const key = JSON.stringify([cell.scorer, ...cell.groups]);
      const result = results.get(key) ?? { ...resultOf(cell.scorer, page.groupBy, cell.groups), sum: 0 };
      result.count += cell.count;
      result.sum += cell.sum;
      result.distribution[cell.bin] = (result.distribution[cell.bin] ?? 0) + cell.count;
      results.set(key, result);
    }
    const ordered = [...results.entries()]
      .sort(([a, x], [b, y]) => rank(x.scorer) - rank(y.scorer) || a.localeCompare(b))
      .map(([, { sum, ...result }]) => ({ ...result, mean: Math.min(1, Math.max(0, sum / result.count)) }));
    return { object: 'bucket' as const, start_time: bucket.start, end_time: bucket.end, results: ordered };
  });
  return { object: 'page', data, has_more: page.nextPage !== null, next_page: page.nextPage };
}

export function presentBackfill(backfill: QualityBackfillRecord): QualityBackfill {
  return {
    id: backfill.id,
    object: 'quality.backfill',
    status: backfill.status,
    start_time: unixSeconds(backfill.start_time),
    end_time: unixSeconds(backfill.end_time),
    scorers: backfill.scorers,
    runs_total: backfill.runs_total,
    runs_scored: backfill.runs_scored,
    error: backfill.error,
    created_at: unixSeconds(backfill.created_at),
    completed_at: unixSeconds(backfill.completed_at),
  };
}
