-- Datasets: the cases an agent is evaluated on. An item is a run's input (its messages and attached files), what
-- it is expected to answer (if anything), and, when it was taken from a past run, every tool call that run made
-- with its answer: an experiment in replay mode answers its own tool calls from them instead of calling the tools.
CREATE TABLE datasets (
  id           text PRIMARY KEY,
  project_id   text NOT NULL REFERENCES projects(id),
  name         text NOT NULL,
  description  text NOT NULL DEFAULT '',
  metadata     jsonb NOT NULL DEFAULT '{}',
  -- The scorers an experiment on the dataset uses when it names none (an import maps its grading criteria here).
  scorers      jsonb NOT NULL DEFAULT '[]',
  item_count   integer NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX datasets_project_page ON datasets (project_id, created_at, id);

CREATE TABLE dataset_items (
  id             text PRIMARY KEY,
  dataset_id     text NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
  project_id     text NOT NULL,
  -- The run input: a list of user and assistant messages.
  input          jsonb NOT NULL,
  file_ids       text[] NOT NULL DEFAULT '{}',
  -- What a right answer is: a string, or any JSON value; null when the item names none.
  expected       jsonb,
  metadata       jsonb NOT NULL DEFAULT '{}',
  -- The run the item was taken from (runs may expire before their items: no foreign key).
  source_run_id  text,
  -- The source run's tool calls in order, each {tool, arguments, content, is_error}; null for an item written by hand.
  tool_calls     jsonb,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dataset_items_page ON dataset_items (dataset_id, created_at, id);
CREATE INDEX dataset_items_project ON dataset_items (project_id);
