-- Rate limits of a project across all its API keys (AGENTPLANE_RATE_LIMIT_PROJECT_*), on top of each key's own: a
-- project's admins may make keys, but not more of the deployment than the operator gives the project.
-- One row per limited project: its current one-minute window, as api_key_request_windows holds a key's.
CREATE UNLOGGED TABLE project_request_windows (
  project_id    text PRIMARY KEY,
  started_at    timestamptz NOT NULL,
  requests      integer NOT NULL,
  last_granted  integer NOT NULL DEFAULT 0
);

-- What the project's concurrent-runs limit counts: its runs still going (hops of a network run count as that run).
CREATE INDEX runs_project_active ON runs (project_id) WHERE parent_run_id IS NULL AND status IN ('queued', 'in_progress');
