-- Agents are versioned: the row holds the current version number; every version's definition is kept in
-- agent_versions, so a run reads exactly the version it started with, even after updates or deletion.
CREATE TABLE agents (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects(id),
  version     integer NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz
);
CREATE INDEX agents_project_page ON agents (project_id, created_at, id) WHERE deleted_at IS NULL;

CREATE TABLE agent_versions (
  agent_id        text NOT NULL REFERENCES agents(id),
  version         integer NOT NULL,
  name            text NOT NULL,
  description     text,
  model           text NOT NULL,
  instructions    text NOT NULL,
  tools           jsonb NOT NULL,
  model_settings  jsonb NOT NULL,
  concurrency     text NOT NULL CHECK (concurrency IN ('allow', 'reject', 'enqueue', 'interrupt')),
  max_steps       integer NOT NULL,
  metadata        jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (agent_id, version)
);

CREATE TABLE runs (
  id               text PRIMARY KEY,
  project_id       text NOT NULL REFERENCES projects(id),
  agent_id         text NOT NULL REFERENCES agents(id),
  agent_version    integer NOT NULL,
  api_key_id       text,
  status           text NOT NULL CHECK (status IN ('queued', 'in_progress', 'completed', 'failed', 'cancelled')),
  model            text NOT NULL,
  resolved_model   text,
  routing_reason   text,
  input            jsonb NOT NULL,
  file_ids         text[] NOT NULL DEFAULT '{}',
  previous_run_id  text REFERENCES runs(id),
  max_steps        integer NOT NULL,
  output_text      text NOT NULL DEFAULT '',
  -- Sums of the completed model calls in run_steps, kept in the transaction that completes each call.
  input_tokens     bigint NOT NULL DEFAULT 0,
  output_tokens    bigint NOT NULL DEFAULT 0,
  cached_tokens    bigint NOT NULL DEFAULT 0,
  cost             numeric NOT NULL DEFAULT 0,
  error            jsonb,
  metadata         jsonb NOT NULL DEFAULT '{}',
  -- The tools offered to the model, resolved once when the run starts (MCP servers are listed then).
  tool_specs       jsonb,
  -- The last event's sequence number: taking the next one locks the run row, so events are totally ordered.
  event_seq        bigint NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  started_at       timestamptz,
  completed_at     timestamptz,
  FOREIGN KEY (agent_id, agent_version) REFERENCES agent_versions (agent_id, version)
);
CREATE INDEX runs_agent_page ON runs (agent_id, created_at, id);
CREATE INDEX runs_project_page ON runs (project_id, created_at, id);
CREATE INDEX runs_active ON runs (agent_id, created_at, id) WHERE status IN ('queued', 'in_progress');

-- Each model call and tool call of a run. A model call records its usage with the price version it was
-- charged at, so cost can be attributed and recomputed.
CREATE TABLE run_steps (
  run_id          text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  index           integer NOT NULL,
  type            text NOT NULL CHECK (type IN ('model_call', 'tool_call')),
  status          text NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed', 'cancelled')),
  attempt         integer NOT NULL DEFAULT 1,
  model           text,
  provider        text,
  price_version   text,
  input_tokens    bigint NOT NULL DEFAULT 0,
  output_tokens   bigint NOT NULL DEFAULT 0,
  cached_tokens   bigint NOT NULL DEFAULT 0,
  cost            numeric NOT NULL DEFAULT 0,
  tool_call       jsonb,
  -- The message the step added to the conversation: the assistant's reply, or the tool's result.
  message         jsonb,
  is_error        boolean NOT NULL DEFAULT false,
  error           jsonb,
  started_at      timestamptz NOT NULL DEFAULT now(),
  completed_at    timestamptz,
  PRIMARY KEY (run_id, index)
);

-- The append-only log the API streams (Server-Sent Events, resumable by sequence number).
CREATE TABLE run_events (
  run_id      text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq         bigint NOT NULL,
  type        text NOT NULL,
  data        jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, seq)
);
