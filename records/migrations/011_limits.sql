-- Rate limits per API key. NULL: the deployment's default (AGENTPLANE_RATE_LIMIT_*), itself unlimited when unset.
ALTER TABLE api_keys
  ADD COLUMN requests_per_minute integer CHECK (requests_per_minute > 0),
  ADD COLUMN concurrent_runs integer CHECK (concurrent_runs > 0);

-- One row per limited key: its current one-minute window, opened by the first request after the last one
-- closed. Every API replica counts in the same row, so they agree; a key has one row, so nothing piles up.
-- Unlogged: a count is worth no WAL write and flush per request; a crash merely empties the windows.
CREATE UNLOGGED TABLE api_key_request_windows (
  api_key_id  text PRIMARY KEY,
  started_at  timestamptz NOT NULL,
  requests    integer NOT NULL
);

-- What the concurrent-runs limit counts: a key's runs still going (hops of a network run count as that run).
CREATE INDEX runs_key_active ON runs (api_key_id) WHERE parent_run_id IS NULL AND status IN ('queued', 'in_progress');

-- Spend limits on a project, an API key or an agent, per UTC day or month.
CREATE TABLE budgets (
  id           text PRIMARY KEY,
  project_id   text NOT NULL REFERENCES projects(id),
  name         text,
  scope_type   text NOT NULL CHECK (scope_type IN ('project', 'api_key', 'agent')),
  -- The key's or agent's id; the project's own id for a project budget.
  scope_id     text NOT NULL,
  period       text NOT NULL CHECK (period IN ('day', 'month')),
  limit_usd    numeric NOT NULL CHECK (limit_usd > 0),
  thresholds   numeric[] NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX budgets_project_page ON budgets (project_id, created_at, id);
CREATE INDEX budgets_scope ON budgets (project_id, scope_type, scope_id);

-- Each threshold of a budget is announced once per period: the row is the proof it was.
CREATE TABLE budget_thresholds_reached (
  budget_id     text NOT NULL REFERENCES budgets(id) ON DELETE CASCADE,
  period_start  timestamptz NOT NULL,
  threshold     numeric NOT NULL,
  reached_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (budget_id, period_start, threshold)
);

