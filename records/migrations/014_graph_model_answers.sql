-- What the graph model (AGENTPLANE_GRAPH_MODEL) answered for a passage of a file, keyed by the passage's hash (its
-- text and the entities listed with it) and the model, so that an extraction run again reads the answer it paid
-- for instead of asking again. Removed with the file, or when its extraction fails.
CREATE TABLE graph_model_answers (
  file_id       text NOT NULL REFERENCES files(id) ON DELETE CASCADE,
  passage_hash  text NOT NULL,
  model         text NOT NULL,
  relations     jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (file_id, passage_hash, model)
);

-- An extraction call is charged once per passage of its file, however often the stage that makes it runs.
ALTER TABLE usage_records ADD COLUMN passage_hash text;
CREATE UNIQUE INDEX usage_records_file_passage ON usage_records (file_id, model, passage_hash) WHERE source = 'extraction';
