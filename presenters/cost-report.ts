/** A cost report in the shape of OpenAI's: a page of buckets, each with one result a group. */
import type { CostRow, ReportDimension } from '../records/cost-report.js';

export interface ReportBucket {
  start: number;
  end: number;
}

function presentCost(row: CostRow) {
  const grouped: Record<string, unknown> = {};
  for (const [dimension, value] of Object.entries(row.dimensions) as [ReportDimension, string | null][]) {
    if (dimension.startsWith('metadata.'))
      ((grouped.metadata ??= {}) as Record<string, string | null>)[dimension.slice('metadata.'.length)] = value;
    else grouped[dimension] = value;
  }
  return {
    object: 'analytics.cost_result' as const,
    amount: { value: row.cost, currency: 'usd' as const },
    ...grouped,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    cached_tokens: row.cached_tokens,
    num_model_requests: row.calls,
  };
}

export function presentCostReport(buckets: ReportBucket[], rows: CostRow[], nextPage: string | null) {
  const byBucket = new Map<number, CostRow[]>();
  for (const row of rows) byBucket.set(row.bucket, [...(byBucket.get(row.bucket) ?? []), row]);
  return {
    object: 'page' as const,
    data: buckets.map((bucket) => ({
      object: 'bucket' as const,
      start_time: bucket.start,
      end_time: bucket.end,
      results: (byBucket.get(bucket.start) ?? []).map(presentCost),
    })),
    has_more: nextPage !== null,
    next_page: nextPage,
  };
}
