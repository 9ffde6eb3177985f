-- Schedules: an agent or a network run at cron times or every so many seconds. The row is the truth; its Temporal
-- Schedule follows it. `revision` counts the row's changes and `synced_revision` the last one written to Temporal,
-- so the maintenance round finds the schedules whose Temporal side is behind (Temporal was down when they changed).
-- A deleted schedule keeps its row, marked, until its Temporal Schedule is gone too.
CREATE TABLE schedules (
  id                      text PRIMARY KEY,
  project_id              text NOT NULL REFERENCES projects(id),
  name                    text,
  agent_id                text,
  network_id              text,
  cron                    text,
  timezone                text NOT NULL DEFAULT 'UTC',
  interval_seconds        integer,
  -- The run request each firing makes, as the run endpoints take it (without `wait` and `stream`).
  run                     jsonb NOT NULL,
  overlap                 text NOT NULL,
  catchup_window_seconds  integer NOT NULL,
  paused                  boolean NOT NULL DEFAULT false,
  metadata                jsonb NOT NULL DEFAULT '{}',
  -- The key that made it: its runs are that key's, for its limits and budgets.
  api_key_id              text,
  -- The Kubernetes resource (Agent or AgentNetwork) that declares it, if any: {kind, namespace, name, uid}.
  managed_resource        jsonb,
  -- Why the last firing made no run (a budget spent, the agent deleted), {code, message, scheduled_at}; null when it did.
  last_error              jsonb,
  revision                integer NOT NULL DEFAULT 1,
  synced_revision         integer,
  deleted_at              timestamptz,
  created_at              timestamptz NOT NULL DEFAULT now(),
  updated_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schedules_project_page ON schedules (project_id, created_at, id);
CREATE INDEX schedules_behind ON schedules (updated_at) WHERE synced_revision IS DISTINCT FROM revision OR deleted_at IS NOT NULL;
CREATE INDEX schedules_agent ON schedules (agent_id) WHERE agent_id IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX schedules_managed ON schedules (project_id, (managed_resource->>'uid')) WHERE managed_resource IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX schedules_network ON schedules (network_id) WHERE network_id IS NOT NULL AND deleted_at IS NULL;

-- A scheduled run names its schedule and the time it was scheduled for: one run per schedule and time, however
-- often a firing is retried (the firing looks for it under the schedule's row lock). A deleted schedule's runs keep
-- its id (no foreign key).
ALTER TABLE runs ADD COLUMN schedule_id text;
ALTER TABLE runs ADD COLUMN scheduled_at timestamptz;
CREATE INDEX runs_schedule_time ON runs (schedule_id, scheduled_at) WHERE schedule_id IS NOT NULL;
