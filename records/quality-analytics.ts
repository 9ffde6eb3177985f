/**
 * Run scores summed up per time bucket, scorer, group and tenth of [0, 1]: what the quality report shows,
 * over the same windows, groupings and filters as the cost report (records/cost-report.ts).
 */
import type { Queryable } from './db.js';
import type { ReportDimension, ReportWindow } from './cost-report.js';

export interface QualityCell {
  /** The bucket's start, Unix seconds. */
  bucket: number;
  scorer: string;
  dimensions: Partial<Record<ReportDimension, string | null>>;
  /** 0 to 9: the tenth of [0, 1] the scores fall in (1 itself in the last). */
  bin: number;
  count: number;
  sum: number;
}

const FILTERED = ['agent_id', 'network_id', 'model', 'api_key_id'] as const;

/** The cells of the window, at most `maxCells` + 1 (more means the page asks for too much). */
export async function qualityCells(
  db: Queryable,
  projectId: string,
  window: ReportWindow,
  options: { scorer?: string; maxCells: number },
): Promise<QualityCell[]> {
  const params: unknown[] = [projectId, window.from, window.to, window.origin, `${window.width} seconds`];
  const param = (value: unknown) => `$${params.push(value)}`;
  const selected = window.groupBy.map(
    (dimension, i) =>
      `${dimension.startsWith('metadata.') ? `metadata ->> ${param(dimension.slice('metadata.'.length))}` : dimension} AS d${i}`,
  );
  const conditions = ['project_id = $1', 'run_completed_at >= to_timestamp($2)', 'run_completed_at < to_timestamp($3)'];
  for (const dimension of FILTERED) {
    const values = window.filters[dimension];
    if (values && values.length > 0) conditions.push(`${dimension} = ANY(${param(values)}::text[])`);
  }
  if (window.filters.metadata && Object.keys(window.filters.metadata).length > 0)
    conditions.push(`metadata @> ${param(JSON.stringify(window.filters.metadata))}::jsonb`);
  if (options.scorer !== undefined) conditions.push(`scorer = ${param(options.scorer)}`);
  const { rows } = await db.query<
    { bucket: string; scorer: string; bin: number; count: string; sum: number } & Record<string, string | null>
  >(
    `SELECT extract(epoch FROM date_bin($5::interval, run_completed_at, to_timestamp($4)))::bigint AS bucket, scorer, ${[...selected, ''].join(', ')}
       least(floor(value * 10), 9)::integer AS bin, count(*) AS count, sum(value)::float8 AS sum
     FROM run_scores WHERE ${conditions.join(' AND ')}
     GROUP BY ${['1', '2', ...window.groupBy.map((_, i) => `d${i}`), 'bin'].join(', ')}
     LIMIT ${param(options.maxCells + 1)}`,
    params,
  );
  return rows.map((row) => ({
    bucket: Number(row.bucket),
    scorer: row.scorer,
    dimensions: Object.fromEntries(window.groupBy.map((dimension, i) => [dimension, row[`d${i}`] ?? null])),
    bin: row.bin,
    count: Number(row.count),
    sum: row.sum,
  }));
}
