-- An experiment item names the run its dataset item was taken from, so that clearing that run's conversation (its
-- thread deleted, its subject forgotten) finds the item's copy and the item's own run, even once the dataset item is
-- gone; items made before this column are found through their dataset item while it exists.
ALTER TABLE experiment_items ADD COLUMN source_run_id text;
-- When the item's copy of the conversation was cleared (input, expected answer, tool calls, output, the scores'
-- explanations); null while it is kept.
ALTER TABLE experiment_items ADD COLUMN payloads_cleared_at timestamptz;
UPDATE experiment_items e SET source_run_id = d.source_run_id
  FROM dataset_items d WHERE d.id = e.dataset_item_id AND d.source_run_id IS NOT NULL;
CREATE INDEX experiment_items_source_run ON experiment_items (project_id, source_run_id) WHERE source_run_id IS NOT NULL;
CREATE INDEX experiment_items_dataset_item ON experiment_items (dataset_item_id);
