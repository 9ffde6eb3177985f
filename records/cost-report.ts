/**
 * Cost reports: the usage ledger summed per time bucket and per the dimensions asked for. Hour-aligned
 * windows without metadata are read from the hourly rollups, everything else from the ledger itself; both
 * give the same sums, exactly.
 */
import type { Queryable } from './db.js';

export type ReportDimension = 'agent_id' | 'network_id' | 'model' | 'api_key_id' | 'source' | `metadata.${string}`;
export const PLAIN_DIMENSIONS = ['agent_id', 'network_id', 'model', 'api_key_id', 'source'] as const;
type PlainDimension = (typeof PLAIN_DIMENSIONS)[number];

export interface ReportFilters {
  agent_id?: string[];
  network_id?: string[];
  model?: string[];
  api_key_id?: string[];
  source?: string[];
  /** Rows whose metadata holds every pair. */
  metadata?: Record<string, string>;
}

/** A window of buckets: [from, to) in Unix seconds, cut into buckets of `width` seconds starting at `origin`. */
export interface ReportWindow {
  from: number;
  to: number;
  origin: number;
  width: number;
  groupBy: ReportDimension[];
  filters: ReportFilters;
}

export interface CostRow {
  /** The bucket's start, Unix seconds. */
  bucket: number;
  dimensions: Partial<Record<ReportDimension, string | null>>;
  cost: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  calls: number;
}

const HOUR = 3600;
const metadataKeyOf = (dimension: ReportDimension) => (dimension.startsWith('metadata.') ? dimension.slice('metadata.'.length) : null);

/** True when the hourly rollups can answer: no metadata asked for, and the window on whole hours. */
function rollupsAnswer(window: ReportWindow): boolean {
  const metadata = window.groupBy.some((d) => metadataKeyOf(d) !== null) || Object.keys(window.filters.metadata ?? {}).length > 0;
  return !metadata && window.from % HOUR === 0 && window.to % HOUR === 0 && window.origin % HOUR === 0 && window.width % HOUR === 0;
}

/** Rows ordered by bucket, then by cost (highest first), then by the dimensions. At most `maxRows` + 1 are read. */
export async function costReport(db: Queryable, projectId: string, window: ReportWindow, maxRows: number): Promise<CostRow[]> {
  const rollups = rollupsAnswer(window);
  const params: unknown[] = [projectId, window.from, window.to, window.origin, `${window.width} seconds`];
  const param = (value: unknown) => `$${params.push(value)}`;
  const time = rollups ? 'hour' : 'created_at';
  // In the rollups an absent dimension is '' (it is part of the key); on the wire it is null.
  const column = (dimension: PlainDimension) =>
    rollups && dimension !== 'model' && dimension !== 'source' ? `NULLIF(${dimension}, '')` : dimension;
  const selected = window.groupBy.map((dimension, i) => {
    const key = metadataKeyOf(dimension);
    return `${key === null ? column(dimension as PlainDimension) : `metadata ->> ${param(key)}`} AS d${i}`;
  });
  const conditions = [`project_id = $1`, `${time} >= to_timestamp($2)`, `${time} < to_timestamp($3)`];
  for (const dimension of PLAIN_DIMENSIONS) {
    const values = window.filters[dimension];
    if (values && values.length > 0) conditions.push(`${dimension} = ANY(${param(values)}::text[])`);
  }
  if (window.filters.metadata && Object.keys(window.filters.metadata).length > 0)
    conditions.push(`metadata @> ${param(JSON.stringify(window.filters.metadata))}::jsonb`);
  const groups = ['1', ...window.groupBy.map((_, i) => `d${i}`)];
  const { rows } = await db.query<
    { bucket: string; cost: string; input_tokens: string; output_tokens: string; cached_tokens: string; calls: string } & Record<
      string,
      string | null
    >
  >(
    `SELECT extract(epoch FROM date_bin($5::interval, ${time}, to_timestamp($4)))::bigint AS bucket, ${[...selected, ''].join(', ')}
       trim_scale(sum(cost))::text AS cost, sum(input_tokens)::bigint AS input_tokens, sum(output_tokens)::bigint AS output_tokens,
       sum(cached_tokens)::bigint AS cached_tokens, ${rollups ? 'sum(calls)' : 'count(*)'}::bigint AS calls
     FROM ${rollups ? 'usage_rollups' : 'usage_records'}
     WHERE ${conditions.join(' AND ')}
     GROUP BY ${groups.join(', ')}
     HAVING ${rollups ? 'sum(calls)' : 'count(*)'} > 0
     ORDER BY 1, sum(cost) DESC${window.groupBy.map((_, i) => `, d${i} NULLS FIRST`).join('')}
     LIMIT ${param(maxRows + 1)}`,
    params,
  );
  return rows.map((row) => ({
    bucket: Number(row.bucket),
    dimensions: Object.fromEntries(window.groupBy.map((dimension, i) => [dimension, row[`d${i}`] ?? null])),
    cost: row.cost,
    input_tokens: Number(row.input_tokens),
    output_tokens: Number(row.output_tokens),
    cached_tokens: Number(row.cached_tokens),
    calls: Number(row.calls),
  }));
}
