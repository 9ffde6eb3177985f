/**
 * The parameters analytics reports share: a time range cut into buckets, a page of those buckets, the
 * dimensions to group by and the filters. Buckets start at `start_time` and are `bucket_width` long; the
 * last one ends at `end_time` (now, rounded up to a whole bucket, when it is not given). A page holds
 * `limit` buckets; `page` continues where the previous page's `next_page` said.
 */
import { InvalidRequestError } from '../../errors.js';
import type { ReportDimension, ReportFilters, ReportWindow } from '../../../records/cost-report.js';

export interface ReportQuery {
  start_time: number;
  end_time?: number;
  bucket_width: '1h' | '1d';
  limit: number;
  page?: string;
  group_by?: string[];
  agent_id?: string[];
  network_id?: string[];
  model?: string[];
  api_key_id?: string[];
  source?: string[];
  metadata?: Record<string, string>;
}

export interface ReportPage {
  window: ReportWindow;
  /** Every bucket of the page, empty ones included: [start, end) in Unix seconds. */
  buckets: { start: number; end: number }[];
  /** The cursor of the page after this one, if the range goes on. */
  nextPage: string | null;
}

const WIDTHS = { '1h': 3600, '1d': 86_400 } as const;
const CURSOR = /^bkt_(\d{1,15})$/;

/** The page of buckets a report query asks for. */
export function reportPageOf(query: ReportQuery, now: Date = new Date()): ReportPage {
  const width = WIDTHS[query.bucket_width];
  const start = query.start_time;
  if (query.end_time !== undefined && query.end_time <= start) {
    throw InvalidRequestError('invalid_range', '`end_time` must be after `start_time`.', 'end_time');
  }
  const nowSeconds = Math.floor(now.getTime() / 1000);
  const end = query.end_time ?? start + Math.max(1, Math.ceil((nowSeconds - start) / width)) * width;
  let from = start;
  if (query.page !== undefined) {
    const match = CURSOR.exec(query.page);
    const at = match ? Number(match[1]) : NaN;
    if (!match || at <= start || at >= end || (at - start) % width !== 0) {
      throw InvalidRequestError(
        'invalid_cursor',
        'This `page` is not one this range and bucket width gave; start again without it.',
        'page',
      );
    }
    from = at;
  }
  const to = Math.min(end, from + query.limit * width);
  const buckets: { start: number; end: number }[] = [];
  for (let at = from; at < to; at += width) buckets.push({ start: at, end: Math.min(at + width, end) });
  const groupBy = [...new Set(query.group_by ?? [])] as ReportDimension[];
  const filters: ReportFilters = {
    agent_id: query.agent_id,
    network_id: query.network_id,
    model: query.model,
    api_key_id: query.api_key_id,
    source: query.source,
    metadata: query.metadata,
  };
  return {
    window: { from, to, origin: start, width, groupBy, filters },
    buckets,
    nextPage: to < end ? `bkt_${to}` : null,
  };
}
