-- What a project's limit on experiments at once counts: its experiments queued or running.
CREATE INDEX experiments_project_unfinished ON experiments (project_id) WHERE status IN ('queued', 'running');
