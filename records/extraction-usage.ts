/** What extraction's model calls used and cost, one row a call. */
import type { TokenUsage } from '../models/messages.js';
import type { Queryable } from './db.js';
import { newId } from './ids.js';
import type { PriceApplied } from './run-steps.js';

export interface ExtractionUsage {
  projectId: string;
  fileId: string;
  model: string;
  provider: string;
  usage: TokenUsage;
  price: PriceApplied;
}

/** Records a call, charged as run steps are (cached input at the cached price), in exact numeric; returns the cost. */
export async function recordExtractionUsage(db: Queryable, call: ExtractionUsage): Promise<string> {
  const { usage, price } = call;
  const { rows } = await db.query<{ cost: string }>(
    `INSERT INTO extraction_usage (id, project_id, file_id, model, provider, price_version, input_tokens, output_tokens, cached_tokens, cost)
     VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8::bigint, $9::bigint,
       trim_scale((($7::bigint - $9::bigint)::numeric * $10::numeric + $9::bigint::numeric * $11::numeric + $8::bigint::numeric * $12::numeric) / 1000000))
     RETURNING trim_scale(cost)::text AS cost`,
    [
      newId('usage'),
      call.projectId,
      call.fileId,
      call.model,
      call.provider,
      price.version,
      usage.input_tokens,
      usage.output_tokens,
      usage.cached_tokens,
      price.input_per_million,
      price.cached_input_per_million,
      price.output_per_million,
    ],
  );
  return rows[0]!.cost;
}
