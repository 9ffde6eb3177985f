-- contract: the previous release's conflict target for an extraction's charge (usage_records_file_passage); this
-- release names none, and charges a call at a time its retries share, so it writes the same rows to either table.
--
-- The two tables that grow with every run, the run-event log and the usage ledger, partitioned by UTC day of
-- created_at: expiring a day drops its partition instead of deleting its rows. Each has a default partition,
-- so that a write never fails for want of its day's partition; the maintenance schedule keeps the days ahead
-- made, and moves into a day's partition what the default took for it.

-- Makes the day partitions of `parent` (partitioned by range of created_at) for first_day to last_day, named
-- <parent>_pYYYYMMDD, moving into each the rows its default partition holds for that day; how many it made.
CREATE FUNCTION agentplane_make_day_partitions(parent text, first_day date, last_day date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  day date;
  partition text;
  low timestamptz;
  high timestamptz;
  made integer := 0;
BEGIN
  FOR day IN SELECT d::date FROM generate_series(first_day, last_day, interval '1 day') d LOOP
    partition := parent || '_p' || to_char(day, 'YYYYMMDD');
    CONTINUE WHEN to_regclass(partition) IS NOT NULL;
    low := day::timestamp AT TIME ZONE 'UTC';
    high := (day + 1)::timestamp AT TIME ZONE 'UTC';
    -- Made apart and attached, which locks the table's readers and writers out of the default partition alone,
    -- where creating it as a partition would lock them out of the whole table. The rows the default took for
    -- the day move into it, and the ledger's rollups, which already count them, stay as they are.
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', partition, parent);
    PERFORM set_config('agentplane.moving_rows', 'on', true);
    EXECUTE format('WITH moved AS (DELETE FROM %I WHERE created_at >= $1 AND created_at < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved',
      parent || '_default', partition) USING low, high;
    PERFORM set_config('agentplane.moving_rows', 'off', true);
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, partition, low, high);
    made := made + 1;
  END LOOP;
  RETURN made;
END $$;

-- The run-event log.
ALTER TABLE run_events RENAME TO run_events_unpartitioned;
ALTER INDEX run_events_pkey RENAME TO run_events_unpartitioned_pkey;
CREATE TABLE run_events (
  run_id      text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq         bigint NOT NULL,
  type        text NOT NULL,
  data        jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- (run_id, seq) is unique by itself: a run's row hands out its sequence numbers.
  PRIMARY KEY (run_id, seq, created_at)
) PARTITION BY RANGE (created_at);
CREATE TABLE run_events_default PARTITION OF run_events DEFAULT;
SELECT agentplane_make_day_partitions('run_events',
  LEAST((SELECT min(created_at AT TIME ZONE 'UTC')::date FROM run_events_unpartitioned), (now() AT TIME ZONE 'UTC')::date),
  (now() AT TIME ZONE 'UTC')::date + 7);
INSERT INTO run_events SELECT run_id, seq, type, data, created_at FROM run_events_unpartitioned;
DROP TABLE run_events_unpartitioned;

-- The usage ledger. Its rollups already count its rows: they are copied without the trigger, which comes after.
ALTER TABLE usage_records RENAME TO usage_records_unpartitioned;
ALTER INDEX usage_records_pkey RENAME TO usage_records_unpartitioned_pkey;
ALTER INDEX usage_records_project_time RENAME TO usage_records_unpartitioned_project_time;
ALTER INDEX usage_records_run_step RENAME TO usage_records_unpartitioned_run_step;
ALTER INDEX usage_records_file_passage RENAME TO usage_records_unpartitioned_file_passage;
CREATE TABLE usage_records (
  id             text NOT NULL,
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
  -- When the call was charged: for a run's step, when the step started; for a passage, when its file was
  -- uploaded. Every retry of the charge has the same, so the unique keys below hold it to one row.
  created_at     timestamptz NOT NULL DEFAULT now(),
  passage_hash   text,
  PRIMARY KEY (id, created_at)
) PARTITION BY RANGE (created_at);
CREATE INDEX usage_records_project_time ON usage_records (project_id, created_at);
CREATE UNIQUE INDEX usage_records_run_step ON usage_records (run_id, step_index, created_at) WHERE source = 'run';
CREATE UNIQUE INDEX usage_records_file_passage ON usage_records (file_id, model, passage_hash, created_at) WHERE source = 'extraction';
CREATE TABLE usage_records_default PARTITION OF usage_records DEFAULT;
SELECT agentplane_make_day_partitions('usage_records',
  LEAST((SELECT min(created_at AT TIME ZONE 'UTC')::date FROM usage_records_unpartitioned), (now() AT TIME ZONE 'UTC')::date),
  (now() AT TIME ZONE 'UTC')::date + 7);
INSERT INTO usage_records (id, project_id, source, run_id, step_index, file_id, agent_id, network_id, api_key_id, model, provider,
                           price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, created_at, passage_hash)
SELECT id, project_id, source, run_id, step_index, file_id, agent_id, network_id, api_key_id, model, provider,
       price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, created_at, passage_hash
FROM usage_records_unpartitioned;

-- The roll-up, as 019 made it, now of the partitioned table's rows; the old table's goes with it.
DROP TRIGGER usage_records_roll_up ON usage_records_unpartitioned;
DROP FUNCTION usage_roll_up(usage_records_unpartitioned, integer);
DROP TABLE usage_records_unpartitioned;
CREATE FUNCTION usage_roll_up(r usage_records, sign integer) RETURNS void LANGUAGE sql AS $$
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
-- Rows moved between partitions (agentplane_make_day_partitions) are counted already.
CREATE OR REPLACE FUNCTION usage_records_roll_up() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('agentplane.moving_rows', true) = 'on' THEN RETURN NULL; END IF;
  IF TG_OP <> 'INSERT' THEN PERFORM usage_roll_up(OLD, -1); END IF;
  IF TG_OP <> 'DELETE' THEN PERFORM usage_roll_up(NEW, 1); END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER usage_records_roll_up AFTER INSERT OR UPDATE OR DELETE ON usage_records
  FOR EACH ROW EXECUTE FUNCTION usage_records_roll_up();

-- The audit log: kept unless the operator sets a retention, and then only a day already exported to the blob
-- store may go, by the maintenance schedule, which says so for its transaction.
CREATE OR REPLACE FUNCTION audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('agentplane.expiring_audit_logs', true) = 'on' THEN RETURN OLD; END IF;
  RAISE EXCEPTION 'audit_logs is append-only';
END $$;
CREATE TABLE audit_log_exports (
  day         date PRIMARY KEY,
  blob_key    text NOT NULL,
  entries     bigint NOT NULL,
  exported_at timestamptz NOT NULL DEFAULT now()
);

-- How far back each table's expiry has gone: what was before is gone (the usage ledger's rows live on only as
-- their hourly rollups), so what would need it is refused instead of answered short.
CREATE TABLE retention_horizons (
  table_name      text PRIMARY KEY,
  expired_before  timestamptz NOT NULL
);
