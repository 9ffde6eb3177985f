-- The usage ledger: one row a model call, whatever made it (a run's step, extraction, a quality judge),
-- charged at the price version in effect and attributed to what the call was made for. No foreign keys:
-- what was spent stays spent after the run, agent, key or file is gone.
CREATE TABLE usage_records (
  id             text PRIMARY KEY,
  project_id     text NOT NULL,
  source         text NOT NULL CHECK (source IN ('run', 'extraction', 'judge')),
  run_id         text,
  step_index     integer,
  file_id        text,
  agent_id       text,
  network_id     text,
  api_key_id     text,
  model          text NOT NULL,
  provider       text NOT NULL,
  price_version  text NOT NULL,
  input_tokens   bigint NOT NULL,
  output_tokens  bigint NOT NULL,
  cached_tokens  bigint NOT NULL,
  cost           numeric NOT NULL,
  metadata       jsonb NOT NULL DEFAULT '{}',
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_records_project_time ON usage_records (project_id, created_at);
-- A run's model call is charged once, however often the activity that completes it runs.
CREATE UNIQUE INDEX usage_records_run_step ON usage_records (run_id, step_index) WHERE source = 'run';

-- The one formula: cached input at the cached price, the rest of the input at the input price, output at the
-- output price, all per million tokens, in exact numeric.
CREATE FUNCTION usage_cost(input_tokens bigint, cached_tokens bigint, output_tokens bigint,
                           input_per_million numeric, cached_per_million numeric, output_per_million numeric)
RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT trim_scale(((input_tokens - cached_tokens)::numeric * input_per_million
    + cached_tokens::numeric * cached_per_million + output_tokens::numeric * output_per_million) / 1000000)
$$;

-- The ledger summed by UTC hour and by every dimension but metadata, kept by a trigger in the transaction of
-- each change to the ledger (a call recorded, a cost repriced), so a cost report reads hours, not calls. An
-- absent dimension is '' here, so that it can be part of the key.
CREATE TABLE usage_rollups (
  project_id     text NOT NULL,
  hour           timestamptz NOT NULL,
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
  PRIMARY KEY (project_id, hour, source, agent_id, network_id, model, api_key_id)
);

CREATE FUNCTION usage_roll_up(r usage_records, sign integer) RETURNS void LANGUAGE sql AS $$
  INSERT INTO usage_rollups AS u (project_id, hour, source, agent_id, network_id, model, api_key_id, input_tokens, output_tokens, cached_tokens, cost, calls)
  VALUES (r.project_id, date_trunc('hour', r.created_at, 'UTC'), r.source, COALESCE(r.agent_id, ''), COALESCE(r.network_id, ''), r.model,
          COALESCE(r.api_key_id, ''), sign * r.input_tokens, sign * r.output_tokens, sign * r.cached_tokens, sign * r.cost, sign)
  ON CONFLICT (project_id, hour, source, agent_id, network_id, model, api_key_id) DO UPDATE SET
    input_tokens = u.input_tokens + EXCLUDED.input_tokens, output_tokens = u.output_tokens + EXCLUDED.output_tokens,
    cached_tokens = u.cached_tokens + EXCLUDED.cached_tokens, cost = u.cost + EXCLUDED.cost, calls = u.calls + EXCLUDED.calls
$$;

CREATE FUNCTION usage_records_roll_up() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN PERFORM usage_roll_up(OLD, -1); END IF;
  IF TG_OP <> 'DELETE' THEN PERFORM usage_roll_up(NEW, 1); END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER usage_records_roll_up AFTER INSERT OR UPDATE OR DELETE ON usage_records
  FOR EACH ROW EXECUTE FUNCTION usage_records_roll_up();

-- What was recorded before the ledger: the runs' completed model calls, and extraction's calls.
INSERT INTO usage_records (id, project_id, source, run_id, step_index, agent_id, network_id, api_key_id, model, provider,
                           price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
SELECT 'usage_' || md5(s.run_id || ':' || s.index), r.project_id, 'run', s.run_id, s.index, r.agent_id,
       COALESCE(r.network_id, p.network_id), r.api_key_id, s.model, COALESCE(s.provider, ''), s.price_version,
       s.input_tokens, s.output_tokens, s.cached_tokens, s.cost, r.metadata, COALESCE(s.completed_at, s.started_at)
FROM run_steps s
JOIN runs r ON r.id = s.run_id
LEFT JOIN runs p ON p.id = r.parent_run_id
WHERE s.type = 'model_call' AND s.status = 'completed' AND s.model IS NOT NULL AND s.price_version IS NOT NULL;

INSERT INTO usage_records (id, project_id, source, file_id, model, provider, price_version, input_tokens, output_tokens,
                           cached_tokens, cost, metadata, created_at)
SELECT u.id, u.project_id, 'extraction', u.file_id, u.model, u.provider, u.price_version, u.input_tokens, u.output_tokens,
       u.cached_tokens, u.cost, COALESCE(f.metadata, '{}'), u.created_at
FROM extraction_usage u
LEFT JOIN files f ON f.id = u.file_id;

DROP TABLE extraction_usage;
