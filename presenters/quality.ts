/** The quality report's page of buckets, and a backfill, as the API shows them. */
import type { components } from '../api/generated/openapi.js';
import type { ReportDimension } from '../records/cost-report.js';
import type { QualityCell } from '../records/quality-analytics.js';
import type { QualityBackfillRecord } from '../records/quality-backfills.js';
import { unixSeconds } from './time.js';

type QualityPage = components['schemas']['QualityPage'];
type QualityResult = components['schemas']['QualityResult'];
type QualityBackfill = components['schemas']['QualityBackfill'];

// The built-in scorers first, in this order; people's after them, by name.
const SCORER_ORDER = ['completion', 'latency', 'tool_errors', 'non_empty', 'groundedness', 'judge'];
const rank = (scorer: string) => (SCORER_ORDER.includes(scorer) ? SCORER_ORDER.indexOf(scorer) : SCORER_ORDER.length);

function resultOf(cell: QualityCell): QualityResult {
  const result: QualityResult = {
    object: 'quality.result',
    scorer: cell.scorer,
    mean: 0,
    count: 0,
    distribution: Array<number>(10).fill(0),
  };
  for (const [dimension, value] of Object.entries(cell.dimensions) as [ReportDimension, string | null][]) {
    if (dimension.startsWith('metadata.')) result.metadata = { ...result.metadata, [dimension.slice('metadata.'.length)]: value };
    else result[dimension as 'agent_id' | 'network_id' | 'model' | 'api_key_id'] = value;
  }
  return result;
}

/** Each bucket of the page with one result per scorer and group that has scores in it. */
export function presentQualityPage(buckets: { start: number; end: number }[], cells: QualityCell[], nextPage: string | null): QualityPage {
  const data = buckets.map((bucket) => {
    const results = new Map<string, QualityResult & { sum: number }>();
    for (const cell of cells.filter((c) => c.bucket === bucket.start)) {
      const key = JSON.stringify([cell.scorer, ...Object.values(cell.dimensions)]);
      const result = results.get(key) ?? { ...resultOf(cell), sum: 0 };
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
  return { object: 'page', data, has_more: nextPage !== null, next_page: nextPage };
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
