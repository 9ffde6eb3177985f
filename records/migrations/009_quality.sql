-- Quality scores of finished runs: one row per run and scorer (scoring again replaces the row), with the
-- run's attribution copied in so that analytics group and filter without joining runs. A network's hop
-- carries its network's id.
CREATE TABLE run_scores (
  run_id            text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  scorer            text NOT NULL,
  project_id        text NOT NULL REFERENCES projects(id),
  value             double precision NOT NULL CHECK (value >= 0 AND value <= 1),
  explanation       text NOT NULL,
  agent_id          text,
  network_id        text,
  api_key_id        text,
  model             text NOT NULL,
  metadata          jsonb NOT NULL DEFAULT '{}',
  run_created_at    timestamptz NOT NULL,
  run_completed_at  timestamptz NOT NULL,
  scored_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, scorer)
);
CREATE INDEX run_scores_by_time ON run_scores (project_id, run_completed_at);

-- Finished runs by the time they ended, for scoring a past range again in keyset batches.
CREATE INDEX runs_finished ON runs (project_id, completed_at, id) WHERE completed_at IS NOT NULL;

-- A request to score a range of finished runs again; the workflow that does it keeps its place here.
CREATE TABLE quality_backfills (
  id                 text PRIMARY KEY,
  project_id         text NOT NULL REFERENCES projects(id),
  status             text NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed')),
  start_time         timestamptz NOT NULL,
  end_time           timestamptz NOT NULL,
  scorers            text[] NOT NULL,
  runs_total         integer NOT NULL,
  runs_scored        integer NOT NULL DEFAULT 0,
  -- The last run scored, in (completed_at, id) order: where the next batch starts.
  after_completed_at timestamptz,
  after_run_id       text,
  error              jsonb,
  created_at         timestamptz NOT NULL DEFAULT now(),
  completed_at       timestamptz
);
CREATE INDEX quality_backfills_project ON quality_backfills (project_id, created_at, id);
