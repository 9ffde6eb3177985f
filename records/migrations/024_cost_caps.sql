-- Hard cost caps. An agent's or a network's `max_cost_usd` caps each of its runs (a network's, its whole tree);
-- a run may set its own. The cap a run runs under is kept on the run.
ALTER TABLE agent_versions ADD COLUMN max_cost_usd numeric;
ALTER TABLE network_versions ADD COLUMN max_cost_usd numeric;
ALTER TABLE runs ADD COLUMN max_cost_usd numeric;

-- A model call's worst case (its input and its output allowance at the model's price), held against every cap and
-- budget it counts towards from before the call until the transaction that records its usage, or its failure,
-- or the end of its run. One a step: an attempt made again holds the same one.
CREATE TABLE cost_reservations (
  run_id       text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step_index   integer NOT NULL,
  -- The run whose tree it counts in: the network run of a hop, the run itself otherwise.
  root_run_id  text NOT NULL,
  project_id   text NOT NULL,
  api_key_id   text,
  agent_id     text,
  amount       numeric NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, step_index)
);
CREATE INDEX cost_reservations_root ON cost_reservations (root_run_id);
CREATE INDEX cost_reservations_project ON cost_reservations (project_id);
