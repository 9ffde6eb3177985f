-- When the workflow of a run, or of a file's extraction, was known to have started. Maintenance retries only
-- starts never confirmed, so runs and files that wait with a workflow of their own (an `enqueue` run waiting
-- its turn, a run on a queue nobody polls, a long extraction) never crowd out those whose start was lost.
-- Rows from before this column have none: maintenance starts each once more (a no-op where the workflow
-- exists) and then records it.
ALTER TABLE runs ADD COLUMN workflow_started_at timestamptz;
ALTER TABLE files ADD COLUMN workflow_started_at timestamptz;
CREATE INDEX runs_unconfirmed_start ON runs (project_id, created_at)
  WHERE status = 'queued' AND parent_run_id IS NULL AND workflow_started_at IS NULL;
CREATE INDEX files_unconfirmed_start ON files (project_id, created_at)
  WHERE status = 'processing' AND workflow_started_at IS NULL;
