/**
 * Cost reports: the usage ledger summed per time bucket and per the dimensions asked for. Hour-aligned
 * windows are read from the hourly rollups: without metadata from `usage_rollups`; grouped by one metadata
 * key, or filtered by one pair, from `usage_tag_rollups` (with the calls lacking the key as the hour's total
 * less those having it). Anything else is read from the ledger itself. All give the same sums, exactly.
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

/** Where a report is read from. */
type Source = { from: 'ledger' } | { from: 'rollups' } | { from: 'tags'; key: string; value?: string };

function sourceOf(window: ReportWindow): Source {
  const onHours = window.from % HOUR === 0 && window.to % HOUR === 0 && window.origin % HOUR === 0 && window.width % HOUR === 0;
  if (!onHours) return { from: 'ledger' };
  const keys = [...new Set(window.groupBy.map(metadataKeyOf).filter((key) => key !== null))];
  const pairs = Object.entries(window.filters.metadata ?? {});
  if (keys.length === 0 && pairs.length === 0) return { from: 'rollups' };
  if (keys.length === 1 && pairs.length === 0) return { from: 'tags', key: keys[0]! };
  if (keys.length === 0 && pairs.length === 1) return { from: 'tags', key: pairs[0]![0], value: pairs[0]![1] };
  return { from: 'ledger' };
}

const ROLLUP_COLUMNS =
  'project_id, hour, source, agent_id, network_id, model, api_key_id, input_tokens, output_tokens, cached_tokens, cost, calls';

/**
 * The rows a report over the tag rollups sums, in the rollups' columns and `meta`, the key's value: each
 * hour's rows having the key with its value, the hour's total with none, and the rows having the key once
 * more, negated, with none. What is left under none is the calls lacking the key.
 */
function taggedRows(key: string, param: (value: unknown) => string): string {
  const k = param(key);
  return `(SELECT ${ROLLUP_COLUMNS}, NULL::text AS meta FROM usage_rollups WHERE project_id = $1
      AND hour >= to_timestamp($2) AND hour < to_timestamp($3)
    UNION ALL
    SELECT t.project_id, t.hour, t.source, t.agent_id, t.network_id, t.model, t.api_key_id, s.sign * t.input_tokens,
      s.sign * t.output_tokens, s.sign * t.cached_tokens, s.sign * t.cost, s.sign * t.calls, s.meta
    FROM usage_tag_rollups t CROSS JOIN LATERAL (VALUES (t.tag_value, 1), (NULL::text, -1)) AS s(meta, sign)
    WHERE t.project_id = $1 AND t.tag_key = ${k} AND t.hour >= to_timestamp($2) AND t.hour < to_timestamp($3)) tagged`;
}

/** Whether the report is summed from the ledger's calls, not from its hourly rollups. */
export const readsLedger = (window: ReportWindow) => sourceOf(window).from === 'ledger';

/** Rows ordered by bucket, then by cost (highest first), then by the dimensions. At most `maxRows` + 1 are read. */
export async function costReport(db: Queryable, projectId: string, window: ReportWindow, maxRows: number): Promise<CostRow[]> {
  const source = sourceOf(window);
  const rollups = source.from !== 'ledger';
  const params: unknown[] = [projectId, window.from, window.to, window.origin, `${window.width} seconds`];
  const param = (value: unknown) => `$${params.push(value)}`;
  const time = rollups ? 'hour' : 'created_at';
  // In the rollups an absent dimension is '' (it is part of the key); on the wire it is null.
  const column = (dimension: PlainDimension) =>
    rollups && dimension !== 'model' && dimension !== 'source' ? `NULLIF(${dimension}, '')` : dimension;
  const selected = window.groupBy.map((dimension, i) => {
    const key = metadataKeyOf(dimension);
    const value = key === null ? column(dimension as PlainDimension) : source.from === 'tags' ? 'meta' : `metadata ->> ${param(key)}`;
    return `${value} AS d${i}`;
  });
  const conditions = [`project_id = $1`, `${time} >= to_timestamp($2)`, `${time} < to_timestamp($3)`];
  for (const dimension of PLAIN_DIMENSIONS) {
    const values = window.filters[dimension];
    if (values && values.length > 0) conditions.push(`${dimension} = ANY(${param(values)}::text[])`);
  }
  let from = rollups ? 'usage_rollups' : 'usage_records';
  if (source.from === 'tags' && source.value !== undefined) {
    from = 'usage_tag_rollups';
    conditions.push(`tag_key = ${param(source.key)}`, `tag_value = ${param(source.value)}`);
  } else if (source.from === 'tags') {
    from = taggedRows(source.key, param);
  } else if (window.filters.metadata && Object.keys(window.filters.metadata).length > 0) {
    conditions.push(`metadata @> ${param(JSON.stringify(window.filters.metadata))}::jsonb`);
  }
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
     FROM ${from}
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
