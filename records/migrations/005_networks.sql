-- Networks are versioned like agents. A network run is a parent run (network_id set, agent_id null); each
-- hop is a child run of a member agent, numbered by hop_index, carrying the router's decision.
CREATE TABLE networks (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects(id),
  version     integer NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz
);
CREATE INDEX networks_project_page ON networks (project_id, created_at, id) WHERE deleted_at IS NULL;

CREATE TABLE network_versions (
  network_id   text NOT NULL REFERENCES networks(id),
  version      integer NOT NULL,
  name         text NOT NULL,
  description  text,
  members      text[] NOT NULL,
  router       jsonb NOT NULL,
  max_hops     integer NOT NULL,
  concurrency  text NOT NULL CHECK (concurrency IN ('allow', 'reject', 'enqueue', 'interrupt')),
  metadata     jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (network_id, version)
);

ALTER TABLE runs
  ALTER COLUMN agent_id DROP NOT NULL,
  ALTER COLUMN agent_version DROP NOT NULL,
  ADD COLUMN network_id text REFERENCES networks(id),
  ADD COLUMN network_version integer,
  ADD COLUMN parent_run_id text REFERENCES runs(id),
  ADD COLUMN hop_index integer,
  -- A hop's router decision: {router, reason}.
  ADD COLUMN hop_decision jsonb,
  -- A hop that handed control on: {to, reason, message}.
  ADD COLUMN handoff jsonb,
  ADD FOREIGN KEY (network_id, network_version) REFERENCES network_versions (network_id, version),
  ADD CONSTRAINT runs_agent_or_network CHECK ((agent_id IS NULL) <> (network_id IS NULL)),
  -- A hop is started once, however often the step that starts it runs.
  ADD CONSTRAINT runs_one_child_per_hop UNIQUE (parent_run_id, hop_index);

CREATE INDEX runs_network_page ON runs (network_id, created_at, id) WHERE network_id IS NOT NULL;
CREATE INDEX runs_network_active ON runs (network_id, created_at, id) WHERE network_id IS NOT NULL AND status IN ('queued', 'in_progress');
