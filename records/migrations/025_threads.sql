-- Threads: conversations that last. A thread holds the messages of the runs made on it (each run's input and
-- output, appended in the transaction that ends the run), in order; the next run on it reads them as its context.
CREATE TABLE threads (
  id             text PRIMARY KEY,
  project_id     text NOT NULL REFERENCES projects(id),
  -- The end user, customer or account the conversation is with; memories are kept per subject.
  subject_id     text,
  metadata       jsonb NOT NULL DEFAULT '{}',
  message_count  integer NOT NULL DEFAULT 0,
  last_run_id    text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX threads_project_page ON threads (project_id, created_at, id);
CREATE INDEX threads_subject ON threads (project_id, subject_id, created_at, id) WHERE subject_id IS NOT NULL;

CREATE TABLE thread_messages (
  id          text PRIMARY KEY,
  thread_id   text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  project_id  text NOT NULL,
  -- Its place in the thread, from 1.
  seq         integer NOT NULL,
  -- The run that added it (runs outlive their thread: no foreign key).
  run_id      text,
  role        text NOT NULL CHECK (role IN ('user', 'assistant')),
  content     text NOT NULL,
  -- Its size as the context window counts it (an estimate made once, as it is written).
  tokens      integer NOT NULL,
  search      tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (thread_id, seq)
);
CREATE INDEX thread_messages_search ON thread_messages USING gin (search);
CREATE INDEX thread_messages_project ON thread_messages (project_id);

-- A run on a thread, and the subject it ran for (the thread's, unless the run named one and the thread has none).
ALTER TABLE runs ADD COLUMN thread_id text;
ALTER TABLE runs ADD COLUMN subject_id text;
CREATE INDEX runs_thread ON runs (thread_id, created_at, id) WHERE thread_id IS NOT NULL;
CREATE INDEX runs_subject ON runs (project_id, subject_id) WHERE subject_id IS NOT NULL;
