-- Experiments: a dataset's items run against one version of an agent or a network, each as a real run, scored when
-- it ends. An item keeps a copy of its dataset item (input, files, expected answer, tool calls, and the tool list
-- the source run was offered), so that deleting or changing the dataset later changes nothing an experiment ran.
CREATE TABLE experiments (
  id            text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES projects(id),
  name          text NOT NULL DEFAULT '',
  dataset_id    text NOT NULL,
  agent_id      text,
  network_id    text,
  version       integer NOT NULL,
  -- An agent experiment's changes to the version it runs: model, instructions, model_settings.
  overrides     jsonb,
  -- The scorers, each a name or an object with its `name`.
  scorers       jsonb NOT NULL DEFAULT '[]',
  -- replay: tool calls are answered from the items' recorded calls; live: the tools are called.
  tools         text NOT NULL,
  concurrency   integer NOT NULL,
  status        text NOT NULL DEFAULT 'queued',
  error         jsonb,
  metadata      jsonb NOT NULL DEFAULT '{}',
  -- The key that made it: its runs are that key's, under its limits and budgets.
  api_key_id    text NOT NULL,
  -- The key's limit on runs queued or in progress at once when the experiment was made (null: none); its item runs wait for room.
  key_concurrent_runs integer,
  created_at    timestamptz NOT NULL DEFAULT now(),
  started_at    timestamptz,
  completed_at  timestamptz,
  -- An experiment runs an agent or a network, never both.
  CONSTRAINT experiments_one_target CHECK ((agent_id IS NULL) <> (network_id IS NULL)),
  -- The two tool modes the API accepts.
  CONSTRAINT experiments_tools CHECK (tools IN ('replay', 'live')),
  -- The experiment states the API shows.
  CONSTRAINT experiments_status CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled'))
);
CREATE INDEX experiments_project_page ON experiments (project_id, created_at, id);
CREATE INDEX experiments_dataset_page ON experiments (project_id, dataset_id, created_at, id);
-- Experiments whose start the maintenance round looks for.
CREATE INDEX experiments_queued ON experiments (created_at) WHERE status = 'queued';

CREATE TABLE experiment_items (
  id               text PRIMARY KEY,
  experiment_id    text NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  project_id       text NOT NULL,
  dataset_item_id  text NOT NULL,
  input            jsonb NOT NULL,
  file_ids         text[] NOT NULL DEFAULT '{}',
  expected         jsonb,
  tool_calls       jsonb,
  -- The tools the source run (and its hops) were offered, for a replayed run to offer a server's tools unasked.
  tool_specs       jsonb,
  run_id           text,
  status           text NOT NULL DEFAULT 'queued',
  output           text,
  scores           jsonb NOT NULL DEFAULT '[]',
  cost_usd         numeric,
  latency_ms       integer,
  error            jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  completed_at     timestamptz,
  -- The item states the API shows.
  CONSTRAINT experiment_items_status CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled'))
);
CREATE INDEX experiment_items_page ON experiment_items (experiment_id, created_at, id);
CREATE UNIQUE INDEX experiment_items_run ON experiment_items (run_id);

-- A run made by an experiment: which one, the changes to its agent's definition it runs with, and the item whose
-- recorded tool calls answer its own (null: its tools are called). A network run's hops carry their parent's.
ALTER TABLE runs ADD COLUMN experiment_id text;
ALTER TABLE runs ADD COLUMN agent_overrides jsonb;
ALTER TABLE runs ADD COLUMN replay_item_id text;
CREATE INDEX runs_experiment ON runs (experiment_id) WHERE experiment_id IS NOT NULL;

-- A tool step answered from a recorded call (its index in the snapshot) rather than by calling the tool.
ALTER TABLE run_steps ADD COLUMN replayed_from integer;
