/**
 * What an analytics report reads, once its parameters are checked (api/routes/analytics/parameters.ts): a
 * project, a span of buckets, the dimensions to group by and the filters; and the SQL that selects it from
 * a table with the attribution columns `agent_id`, `network_id`, `model`, `api_key_id`, `metadata` (jsonb).
 */

export type Dimension = 'agent_id' | 'network_id' | 'model' | 'api_key_id';
export const DIMENSIONS: readonly Dimension[] = ['agent_id', 'network_id', 'model', 'api_key_id'];

/** A grouping: one of the columns, or a metadata key. */
export type Grouping = { column: Dimension } | { metadataKey: string };

export interface AnalyticsSelection {
  projectId: string;
  /** The report's first bucket starts here (Unix seconds); buckets are `bucketSeconds` wide from it. */
  origin: number;
  bucketSeconds: number;
  /** The span this page covers, Unix seconds: [from, to). */
  from: number;
  to: number;
  groupBy: Grouping[];
  filters: Partial<Record<Dimension, string>> & { metadata?: Record<string, string> };
}

/**
 * The WHERE clause, the bucket index and the grouped expressions (aliased g0, g1, …) for `selection` over
 * `timeColumn`; values are appended to `params` as positional parameters.
 */
export function selectionSql(selection: AnalyticsSelection, timeColumn: string, params: unknown[]): { where: string; bucket: string; groups: string[] } {
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const conditions = [
    `project_id = ${param(selection.projectId)}`,
    `${timeColumn} >= to_timestamp(${param(selection.from)})`,
    `${timeColumn} < to_timestamp(${param(selection.to)})`,
  ];
  for (const column of DIMENSIONS) {
    const value = selection.filters[column];
    if (value !== undefined) conditions.push(`${column} = ${param(value)}`);
  }
  const metadata = selection.filters.metadata ?? {};
  if (Object.keys(metadata).length > 0) conditions.push(`metadata @> ${param(JSON.stringify(metadata))}::jsonb`);
  const bucket = `floor((extract(epoch FROM ${timeColumn}) - ${param(selection.origin)}) / ${param(selection.bucketSeconds)})::integer`;
  const groups = selection.groupBy.map((g, i) => `${'column' in g ? g.column : `metadata ->> ${param(g.metadataKey)}`} AS g${i}`);
  return { where: conditions.join(' AND '), bucket, groups };
}
