/** Run scores summed up per time bucket, scorer, group and tenth of [0, 1]: what the quality report shows. */
import type { Queryable } from './db.js';
import { selectionSql, type AnalyticsSelection } from './analytics-selection.js';

export interface QualityCell {
  /** The bucket's index from the report's origin. */
  bucket: number;
  scorer: string;
  /** The grouped values, in the order of `groupBy`. */
  groups: (string | null)[];
  /** 0 to 9: the tenth of [0, 1] the scores fall in (1 itself in the last). */
  bin: number;
  count: number;
  sum: number;
}

export async function qualityCells(db: Queryable, selection: AnalyticsSelection, scorer?: string): Promise<QualityCell[]> {
  const params: unknown[] = [];
  const { where, bucket, groups } = selectionSql(selection, 'run_completed_at', params);
  const scorerCondition = scorer === undefined ? '' : ` AND scorer = $${params.push(scorer)}`;
  const groupColumns = groups.map((_, i) => `g${i}`);
  const { rows } = await db.query<{ bucket: number; scorer: string; bin: number; count: string; sum: number } & Record<string, string | null>>(
    `SELECT ${[`${bucket} AS bucket`, 'scorer', ...groups, 'least(floor(value * 10), 9)::integer AS bin', 'count(*) AS count', 'sum(value)::float8 AS sum'].join(', ')}
     FROM run_scores WHERE ${where}${scorerCondition}
     GROUP BY ${['1', '2', ...groupColumns, 'bin'].join(', ')}`,
    params,
  );
  return rows.map((row) => ({ bucket: row.bucket, scorer: row.scorer, groups: groupColumns.map((g) => row[g] ?? null), bin: row.bin, count: Number(row.count), sum: row.sum }));
}
