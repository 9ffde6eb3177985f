-- The items taken from a run are found by it when its conversation is cleared (a thread or a subject forgotten).
CREATE INDEX dataset_items_source_run ON dataset_items (project_id, source_run_id) WHERE source_run_id IS NOT NULL;
