-- The ledger summed by UTC hour, by each metadata pair of its calls, and by every other dimension, kept by
-- the same trigger as usage_rollups: a cost report grouped by one metadata key (or filtered by one pair)
-- reads hours, not calls. A call counts once under each of its pairs; the calls without the key are the
-- hour's total (usage_rollups) less those with it.
CREATE TABLE usage_tag_rollups (
  project_id     text NOT NULL,
  hour           timestamptz NOT NULL,
  tag_key        text NOT NULL,
  tag_value      text NOT NULL,
  source         text NOT NULL,
  agent_id       text NOT NULL,
  network_id     text NOT NULL,
  model          text NOT NULL,
  api_key_id     text NOT NULL,
  input_tokens   bigint NOT NULL,
  output_tokens  bigint NOT NULL,
  cached_tokens  bigint NOT NULL,
  cost           numeric NOT NULL,
  calls          bigint NOT NULL,
  PRIMARY KEY (project_id, tag_key, hour, tag_value, source, agent_id, network_id, model, api_key_id)
);

CREATE OR REPLACE FUNCTION usage_roll_up(r usage_records, sign integer) RETURNS void LANGUAGE sql AS $$
  INSERT INTO usage_rollups AS u (project_id, hour, source, agent_id, network_id, model, api_key_id, input_tokens, output_tokens, cached_tokens, cost, calls)
  VALUES (r.project_id, date_trunc('hour', r.created_at, 'UTC'), r.source, COALESCE(r.agent_id, ''), COALESCE(r.network_id, ''), r.model,
          COALESCE(r.api_key_id, ''), sign * r.input_tokens, sign * r.output_tokens, sign * r.cached_tokens, sign * r.cost, sign)
  ON CONFLICT (project_id, hour, source, agent_id, network_id, model, api_key_id) DO UPDATE SET
    input_tokens = u.input_tokens + EXCLUDED.input_tokens, output_tokens = u.output_tokens + EXCLUDED.output_tokens,
    cached_tokens = u.cached_tokens + EXCLUDED.cached_tokens, cost = u.cost + EXCLUDED.cost, calls = u.calls + EXCLUDED.calls;
  -- A pair whose value is JSON null counts as the key being absent, as `metadata ->> key` reads it.
  INSERT INTO usage_tag_rollups AS u (project_id, hour, tag_key, tag_value, source, agent_id, network_id, model, api_key_id,
                                      input_tokens, output_tokens, cached_tokens, cost, calls)
  SELECT r.project_id, date_trunc('hour', r.created_at, 'UTC'), t.key, t.value, r.source, COALESCE(r.agent_id, ''),
         COALESCE(r.network_id, ''), r.model, COALESCE(r.api_key_id, ''), sign * r.input_tokens, sign * r.output_tokens,
         sign * r.cached_tokens, sign * r.cost, sign
  FROM jsonb_each_text(r.metadata) t WHERE t.value IS NOT NULL
  ON CONFLICT (project_id, tag_key, hour, tag_value, source, agent_id, network_id, model, api_key_id) DO UPDATE SET
    input_tokens = u.input_tokens + EXCLUDED.input_tokens, output_tokens = u.output_tokens + EXCLUDED.output_tokens,
    cached_tokens = u.cached_tokens + EXCLUDED.cached_tokens, cost = u.cost + EXCLUDED.cost, calls = u.calls + EXCLUDED.calls;
$$;

INSERT INTO usage_tag_rollups (project_id, hour, tag_key, tag_value, source, agent_id, network_id, model, api_key_id,
                               input_tokens, output_tokens, cached_tokens, cost, calls)
SELECT r.project_id, date_trunc('hour', r.created_at, 'UTC'), t.key, t.value, r.source, COALESCE(r.agent_id, ''),
       COALESCE(r.network_id, ''), r.model, COALESCE(r.api_key_id, ''), sum(r.input_tokens), sum(r.output_tokens),
       sum(r.cached_tokens), sum(r.cost), count(*)
FROM usage_records r CROSS JOIN LATERAL jsonb_each_text(r.metadata) t
WHERE t.value IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
