-- A tool call that waits for a person: the approval, one per step that needs one. Decided once (approved, with the
-- model's arguments or edited ones, or rejected), expired at `expires_at` (a rejection), or cancelled with its run.
CREATE TABLE approvals (
  id                 text PRIMARY KEY,
  project_id         text NOT NULL REFERENCES projects(id),
  run_id             text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step_index         integer NOT NULL,
  agent_id           text NOT NULL,
  -- The network of the run's tree, when the run is a network's (or one of its hops).
  network_id         text,
  tool_name          text NOT NULL,
  arguments          jsonb NOT NULL,
  status             text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
  decided_arguments  jsonb,
  reason             text,
  decided_by         text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  expires_at         timestamptz NOT NULL,
  decided_at         timestamptz,
  UNIQUE (run_id, step_index)
);
CREATE INDEX approvals_project_page ON approvals (project_id, created_at, id);
CREATE INDEX approvals_pending ON approvals (project_id, created_at, id) WHERE status = 'pending';

-- How many of the run's tool calls wait for a decision: a run with any is shown as `requires_action`.
ALTER TABLE runs ADD COLUMN pending_approvals integer NOT NULL DEFAULT 0;

-- How long an approval waits for a decision before it expires (a rejection): 7 days unless the agent says.
ALTER TABLE agent_versions ADD COLUMN approval_timeout_seconds integer NOT NULL DEFAULT 604800;
