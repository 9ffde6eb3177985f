/**
 * The parameters every analytics report shares (quality, costs): `start_time`, `end_time`, `bucket_width`,
 * `limit` and `page` (keyset paging over buckets), `group_by`, and the filters `agent_id`, `network_id`,
 * `model`, `api_key_id`, `metadata[key]`. The document checks their types; the rules between them are here,
 * each broken one a 400 that names its parameter.
 */
import { InvalidRequestError } from '../../errors.js';
import { DIMENSIONS, type AnalyticsSelection, type Dimension, type Grouping } from '../../../records/analytics-selection.js';

export type BucketWidth = '1h' | '1d';

export const BUCKET_SECONDS: Record<BucketWidth, number> = { '1h': 3_600, '1d': 86_400 };
/** Buckets a page, by width: OpenAI's usage reports' limits. */
export const BUCKETS_PER_PAGE: Record<BucketWidth, { default: number; max: number }> = { '1d': { default: 7, max: 31 }, '1h': { default: 24, max: 168 } };
/** The longest range a report covers. */
export const MAX_RANGE_SECONDS = 366 * 86_400;
const MAX_GROUPINGS = 4;
const METADATA_GROUPING = /^metadata\.([^,\u0000]{1,64})$/;

/** The shared query parameters as the document's types give them. */
export interface AnalyticsParameters {
  start_time: number;
  end_time?: number;
  bucket_width?: BucketWidth;
  group_by?: string;
  limit?: number;
  page?: string;
  agent_id?: string;
  network_id?: string;
  model?: string;
  api_key_id?: string;
  metadata?: Record<string, string>;
}

export interface AnalyticsPage {
  selection: AnalyticsSelection;
  /** The start of each bucket of this page (Unix seconds), and its end (the range's end caps the last). */
  buckets: { start: number; end: number }[];
  /** The cursor of the next page; null on the last. */
  nextPage: string | null;
}

// Rules between parameters, which the document states in words: each has its own code.
const badRange = (param: string, message: string) => InvalidRequestError('invalid_time_range', message, param);

/** A page cursor: the start of the page's first bucket, opaque to clients. */
export const cursorOf = (bucketStart: number) => Buffer.from(`bucket:${bucketStart}`).toString('base64url');

function cursorStart(page: string, origin: number, width: number, end: number): number {
  const match = /^bucket:(\d{1,12})$/.exec(Buffer.from(page, 'base64url').toString('utf8'));
  const start = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(start) || start < origin || start >= end || (start - origin) % width !== 0) {
    throw InvalidRequestError('invalid_cursor', '`page` is not a cursor of this report: pass the `next_page` it answered, with the same `start_time`, `end_time` and `bucket_width`.', 'page');
  }
  return start;
}

/** `group_by`: comma-separated dimensions, each once. */
export function groupingsOf(groupBy: string | undefined): Grouping[] {
  if (groupBy === undefined) return [];
  const names = groupBy.split(',').map((name) => name.trim());
  if (names.length > MAX_GROUPINGS) throw InvalidRequestError('invalid_group_by', `\`group_by\` takes at most ${MAX_GROUPINGS} dimensions.`, 'group_by');
  const groupings: Grouping[] = [];
  for (const name of names) {
    if (names.indexOf(name) !== names.lastIndexOf(name)) throw InvalidRequestError('invalid_group_by', `\`group_by\` names \`${name}\` twice.`, 'group_by');
    const metadata = METADATA_GROUPING.exec(name);
    if (metadata) groupings.push({ metadataKey: metadata[1]! });
    else if ((DIMENSIONS as readonly string[]).includes(name)) groupings.push({ column: name as Dimension });
    else throw InvalidRequestError('invalid_group_by', `\`group_by\` may name ${DIMENSIONS.map((d) => `\`${d}\``).join(', ')} or \`metadata.<key>\`, not \`${name}\`.`, 'group_by');
  }
  return groupings;
}

/** The page of buckets the parameters ask for, and what to select for it. */
export function analyticsPageOf(projectId: string, query: AnalyticsParameters, now = Date.now()): AnalyticsPage {
  const width = query.bucket_width ?? '1d';
  const seconds = BUCKET_SECONDS[width];
  const origin = query.start_time;
  const end = query.end_time ?? Math.ceil(now / 1000);
  if (end <= origin) throw badRange(query.end_time === undefined ? 'start_time' : 'end_time', '`end_time` must be after `start_time` (it defaults to now).');
  if (end - origin > MAX_RANGE_SECONDS) throw badRange('end_time', `The range may span at most ${MAX_RANGE_SECONDS / 86_400} days; ask for a shorter one.`);
  const limits = BUCKETS_PER_PAGE[width];
  const limit = query.limit ?? limits.default;
  if (limit > limits.max) throw InvalidRequestError('limit_exceeds_bucket_width', `With \`bucket_width\` ${width}, \`limit\` is at most ${limits.max} buckets.`, 'limit');
  const first = query.page === undefined ? origin : cursorStart(query.page, origin, seconds, end);
  const buckets: { start: number; end: number }[] = [];
  for (let start = first; start < end && buckets.length < limit; start += seconds) buckets.push({ start, end: Math.min(start + seconds, end) });
  const after = buckets.at(-1)!.start + seconds;
  const { agent_id, network_id, model, api_key_id, metadata } = query;
  return {
    selection: {
      projectId,
      origin,
      bucketSeconds: seconds,
      from: first,
      to: buckets.at(-1)!.end,
      groupBy: groupingsOf(query.group_by),
      filters: { agent_id, network_id, model, api_key_id, metadata },
    },
    buckets,
    nextPage: after < end ? cursorOf(after) : null,
  };
}
