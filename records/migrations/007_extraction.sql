-- What extraction stores beyond page text: where each page's text came from, audio as time-spanned segments,
-- tables as cells, graph items with provenance, and the indexes that search them.
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- unaccent() is only STABLE (it reads a dictionary); naming the dictionary makes a fold indexes can use.
CREATE FUNCTION agentplane_fold(text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, $1)) $$;

-- A row is a page (PDF, text, image: page_number is the page) or a transcript segment (audio: page_number
-- is the segment's position, start_ms/end_ms its span). Search reads the first 100,000 characters of a row.
ALTER TABLE file_pages
  ADD COLUMN start_ms integer,
  ADD COLUMN end_ms integer,
  ADD COLUMN source text NOT NULL DEFAULT 'text_layer' CHECK (source IN ('text_layer', 'ocr', 'plain_text', 'transcript')),
  ADD COLUMN confidence real,
  ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, agentplane_fold(left(text, 100000)))) STORED;
CREATE INDEX file_pages_search ON file_pages USING gin (search);

CREATE TABLE file_tables (
  id            text PRIMARY KEY,
  file_id       text NOT NULL REFERENCES files(id) ON DELETE CASCADE,
  page          integer NOT NULL,
  -- The table's place among its page's tables, so that a resumed extraction writes each table once.
  position      integer NOT NULL,
  box           jsonb,
  row_count     integer NOT NULL,
  column_count  integer NOT NULL,
  detection     text NOT NULL,
  -- More rows than the cells keep (a delimited table holds at most 1,000 rows or 50,000 cells).
  truncated     boolean NOT NULL DEFAULT false,
  cells         jsonb NOT NULL,
  UNIQUE (file_id, page, position)
);

-- A node's name as first written (canonical_name is the folded key) and a trigram index to find it.
ALTER TABLE graph_nodes ADD COLUMN name text NOT NULL DEFAULT '';
CREATE INDEX graph_nodes_name_trgm ON graph_nodes USING gin (canonical_name gin_trgm_ops);

-- Deleting a file checks every node its items touched for other support: these make that check an index probe.
CREATE INDEX graph_items_node ON graph_items (node_id) WHERE node_id IS NOT NULL;
CREATE INDEX graph_items_source ON graph_items (source_node) WHERE source_node IS NOT NULL;
CREATE INDEX graph_items_target ON graph_items (target_node) WHERE target_node IS NOT NULL;

-- Pages extracted before this migration: a text file's came from the file itself, an image's from OCR.
UPDATE file_pages p SET source = CASE f.mime_type WHEN 'text/plain' THEN 'plain_text' ELSE 'ocr' END
  FROM files f WHERE f.id = p.file_id AND f.mime_type IN ('text/plain', 'image/png', 'image/jpeg');

-- Where a tool call's answer came from (the built-in search_context tool's passages), kept with the step.
ALTER TABLE run_steps ADD COLUMN citations jsonb;

-- Model calls made while extracting (relations read by AGENTPLANE_GRAPH_MODEL), charged at the price version in
-- effect. They outlive the file: what was spent stays spent.
CREATE TABLE extraction_usage (
  id             text PRIMARY KEY,
  project_id     text NOT NULL REFERENCES projects(id),
  file_id        text NOT NULL,
  model          text NOT NULL,
  provider       text NOT NULL,
  price_version  text NOT NULL,
  input_tokens   bigint NOT NULL,
  output_tokens  bigint NOT NULL,
  cached_tokens  bigint NOT NULL,
  cost           numeric NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX extraction_usage_project ON extraction_usage (project_id, created_at);
CREATE INDEX extraction_usage_file ON extraction_usage (file_id);

-- A context page's (or segment's) sentence embedding (all-MiniLM-L6-v2, unit length), for search by meaning. A
-- table of its own: adding one never rewrites the page's row (its text and search vector).
CREATE TABLE file_page_embeddings (
  file_id      text NOT NULL REFERENCES files(id) ON DELETE CASCADE,
  page_number  integer NOT NULL,
  embedding    real[] NOT NULL,
  PRIMARY KEY (file_id, page_number)
);
