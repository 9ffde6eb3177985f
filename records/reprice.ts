/**
 * Repricing: the ledger's calls in a time range charged again at the prices the catalogue now gives for
 * their (UTC) day, the cost and price version of each call replaced when applied. The hourly rollups follow
 * through their trigger, in the same statement.
 */
import type { Queryable } from './db.js';

/** One model's prices, oldest first, as the catalogue has them. */
export interface PriceList {
  model: string;
  prices: {
    version: string;
    effective_from: string;
    input_per_million: string;
    cached_input_per_million: string;
    output_per_million: string;
  }[];
}

export interface RepriceTotals {
  records: number;
  changed: number;
  previous_cost: string;
  repriced_cost: string;
  difference: string;
}

export interface RepriceResult extends RepriceTotals {
  models: (RepriceTotals & { model: string; price_versions: string[] })[];
  /** Models in the range that the catalogue no longer prices: their calls are left as they are. */
  unpriced: { model: string; records: number }[];
}

export interface RepriceRange {
  from: number;
  to: number;
  models?: string[];
  apply: boolean;
}

interface ModelRow {
  model: string | null;
  priced: boolean;
  records: string;
  changed: string;
  previous_cost: string;
  repriced_cost: string;
  difference: string;
  price_versions: string[];
}

export async function reprice(db: Queryable, projectId: string, range: RepriceRange, prices: PriceList[]): Promise<RepriceResult> {
  const catalogue = prices.flatMap((list) => list.prices.map((price) => ({ model: list.model, ...price })));
  // The price in effect on the call's day; before a model's first price, that first price. A statement's
  // data-modifying WITH runs to completion whether read or not, and the rest of the statement sees the rows
  // as they were: the report is of the change, applied or not.
  const { rows } = await db.query<ModelRow>(
    `WITH prices AS (
       SELECT * FROM jsonb_to_recordset($4::jsonb) AS p(model text, version text, effective_from date,
         input_per_million numeric, cached_input_per_million numeric, output_per_million numeric)
     ),
     calls AS (
       SELECT u.id, u.model, u.cost, p.version, p.version IS NOT NULL AS priced,
         COALESCE(usage_cost(u.input_tokens, u.cached_tokens, u.output_tokens, p.input_per_million, p.cached_input_per_million, p.output_per_million), u.cost) AS repriced,
         p.version IS NOT NULL AND (p.version <> u.price_version OR usage_cost(u.input_tokens, u.cached_tokens, u.output_tokens,
           p.input_per_million, p.cached_input_per_million, p.output_per_million) <> u.cost) AS changed
       FROM usage_records u
       LEFT JOIN LATERAL (
         SELECT * FROM prices p WHERE p.model = u.model
         ORDER BY p.effective_from <= (u.created_at AT TIME ZONE 'UTC')::date DESC,
           CASE WHEN p.effective_from <= (u.created_at AT TIME ZONE 'UTC')::date THEN p.effective_from END DESC NULLS LAST, p.effective_from
         LIMIT 1
       ) p ON true
       WHERE u.project_id = $1 AND u.created_at >= to_timestamp($2) AND u.created_at < to_timestamp($3)
         AND ($5::text[] IS NULL OR u.model = ANY($5::text[]))
         -- What a remote agent reported its task cost is not priced here, whatever its tool is named.
         AND u.source <> 'a2a'
     ),
     applied AS (
       UPDATE usage_records u SET cost = c.repriced, price_version = c.version
       FROM calls c WHERE $6 AND c.changed AND u.id = c.id
     )
     SELECT model, bool_and(priced) AS priced, count(*)::text AS records, count(*) FILTER (WHERE changed)::text AS changed,
       trim_scale(COALESCE(sum(cost), 0))::text AS previous_cost, trim_scale(COALESCE(sum(repriced), 0))::text AS repriced_cost,
       trim_scale(COALESCE(sum(repriced) - sum(cost), 0))::text AS difference,
       COALESCE(array_agg(DISTINCT version) FILTER (WHERE version IS NOT NULL), '{}') AS price_versions
     FROM calls
     GROUP BY GROUPING SETS ((model), ())
     ORDER BY model NULLS FIRST`,
    [projectId, range.from, range.to, JSON.stringify(catalogue), range.models ?? null, range.apply],
  );
  const [total, ...byModel] = rows;
  const totals = (row: ModelRow | undefined): RepriceTotals => ({
    records: Number(row?.records ?? 0),
    changed: Number(row?.changed ?? 0),
    previous_cost: row?.previous_cost ?? '0',
    repriced_cost: row?.repriced_cost ?? '0',
    difference: row?.difference ?? '0',
  });
  return {
    ...totals(total),
    models: byModel.filter((row) => row.priced).map((row) => ({ model: row.model!, ...totals(row), price_versions: row.price_versions })),
    unpriced: byModel.filter((row) => !row.priced).map((row) => ({ model: row.model!, records: Number(row.records) })),
  };
}
