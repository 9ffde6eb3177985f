-- Projects are tenants: every record below belongs to exactly one.
CREATE TABLE projects (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Only a SHA-256 of each secret is kept; the secret itself is shown once at creation.
CREATE TABLE api_keys (
  id           text PRIMARY KEY,
  project_id   text NOT NULL REFERENCES projects(id),
  name         text NOT NULL,
  secret_hash  bytea NOT NULL UNIQUE,
  prefix       text NOT NULL,
  scopes       text[] NOT NULL,
  bootstrap    boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE INDEX api_keys_project_page ON api_keys (project_id, created_at, id);

CREATE TABLE files (
  id            text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES projects(id),
  filename      text NOT NULL,
  bytes         bigint NOT NULL,
  purpose       text NOT NULL CHECK (purpose IN ('context', 'attachment')),
  status        text NOT NULL CHECK (status IN ('processing', 'processed', 'failed')),
  mime_type     text NOT NULL,
  blob_key      text NOT NULL,
  metadata      jsonb NOT NULL DEFAULT '{}',
  pages         integer NOT NULL DEFAULT 0,
  tables        integer NOT NULL DEFAULT 0,
  graph_items   integer NOT NULL DEFAULT 0,
  last_error    jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  processed_at  timestamptz
);
CREATE INDEX files_project_page ON files (project_id, created_at, id);
CREATE INDEX files_processing ON files (created_at) WHERE status = 'processing';

-- Derived text, one row a page. Text lives here so deleting the file (cascade) removes it.
CREATE TABLE file_pages (
  file_id      text NOT NULL REFERENCES files(id) ON DELETE CASCADE,
  page_number  integer NOT NULL,
  text         text NOT NULL,
  PRIMARY KEY (file_id, page_number)
);

-- A graph item is one entity or relation as extracted from one file; nodes are shared across files
-- and exist only while some item supports them.
CREATE TABLE graph_nodes (
  id              text PRIMARY KEY,
  project_id      text NOT NULL REFERENCES projects(id),
  entity_type     text NOT NULL,
  canonical_name  text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, entity_type, canonical_name)
);

CREATE TABLE graph_items (
  id            text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES projects(id),
  file_id       text NOT NULL REFERENCES files(id) ON DELETE CASCADE,
  kind          text NOT NULL CHECK (kind IN ('entity', 'relation')),
  node_id       text REFERENCES graph_nodes(id),
  source_node   text REFERENCES graph_nodes(id),
  target_node   text REFERENCES graph_nodes(id),
  relation      text,
  provenance    jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX graph_items_file ON graph_items (file_id);

-- The outbox: events are written in the same transaction as the change they announce.
CREATE TABLE events (
  id            text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES projects(id),
  type          text NOT NULL,
  data          jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  delivered_at  timestamptz
);
CREATE INDEX events_project_page ON events (project_id, created_at, id);

-- Append-only. No foreign keys: entries outlive the records they name.
CREATE TABLE audit_logs (
  id           text PRIMARY KEY,
  project_id   text NOT NULL,
  api_key_id   text,
  action       text NOT NULL,
  target_type  text NOT NULL,
  target_id    text,
  status       integer NOT NULL,
  error_code   text,
  request_id   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_logs_project_page ON audit_logs (project_id, created_at, id);

CREATE FUNCTION audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_logs is append-only';
END $$;
CREATE TRIGGER audit_logs_append_only BEFORE UPDATE OR DELETE ON audit_logs
  FOR EACH ROW EXECUTE FUNCTION audit_logs_append_only();

CREATE TABLE idempotency_keys (
  project_id       text NOT NULL REFERENCES projects(id),
  key              text NOT NULL,
  fingerprint      text NOT NULL,
  response_status  integer NOT NULL,
  response_body    jsonb NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- Blobs to remove once due: written before an upload streams (a lease, cancelled when the file record
-- commits) and in the same transaction as a file deletion, so no blob outlives its record.
CREATE TABLE blob_deletions (
  blob_key  text PRIMARY KEY,
  due_at    timestamptz NOT NULL
);
CREATE INDEX blob_deletions_due ON blob_deletions (due_at);
