-- Memories: facts learned about a subject from the threads they were stated in, each with its sources. A memory
-- lives while a source supports it: deleting a thread deletes its sources, then every memory left without one.
CREATE TABLE memories (
  id                 text PRIMARY KEY,
  project_id         text NOT NULL REFERENCES projects(id),
  subject_id         text NOT NULL,
  attribute          text NOT NULL,
  value              text NOT NULL,
  -- The value as two statements of it compare (folded): one memory per subject, attribute and value.
  value_key          text NOT NULL,
  statement          text NOT NULL,
  confidence         real NOT NULL CHECK (confidence > 0 AND confidence <= 1),
  -- `rules` (the offline engine) or the model that read it.
  extractor          text NOT NULL,
  status             text NOT NULL DEFAULT 'current' CHECK (status IN ('current', 'superseded')),
  superseded_by      text REFERENCES memories(id) ON DELETE SET NULL,
  superseded_reason  text,
  superseded_at      timestamptz,
  -- When it was first stated; created_at, when it was first stored.
  learned_at         timestamptz NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  search             tsvector GENERATED ALWAYS AS (to_tsvector('simple', attribute || ' ' || value)) STORED,
  UNIQUE (project_id, subject_id, attribute, value_key)
);
CREATE INDEX memories_page ON memories (project_id, created_at, id);
CREATE INDEX memories_subject ON memories (project_id, subject_id, status);
CREATE INDEX memories_search ON memories USING gin (search);

-- Where a memory was learned: a span of a message of a thread, in the run that added the message.
CREATE TABLE memory_sources (
  memory_id    text NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
  project_id   text NOT NULL,
  thread_id    text NOT NULL,
  run_id       text NOT NULL,
  message_id   text NOT NULL,
  -- The message's place in its thread, then the span: the order in which statements were made.
  message_seq  integer NOT NULL,
  start_offset integer NOT NULL,
  end_offset   integer NOT NULL,
  quote        text NOT NULL,
  learned_at   timestamptz NOT NULL,
  PRIMARY KEY (memory_id, message_id, start_offset)
);
CREATE INDEX memory_sources_thread ON memory_sources (thread_id);

-- Agents and networks that keep memories of the subjects their runs are for.
ALTER TABLE agent_versions ADD COLUMN memory jsonb NOT NULL DEFAULT '{"enabled": false}';
ALTER TABLE network_versions ADD COLUMN memory jsonb NOT NULL DEFAULT '{"enabled": false}';
