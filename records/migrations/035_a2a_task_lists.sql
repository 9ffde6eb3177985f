-- A2A's ListTasks: an agent's (or a network's) runs, the one whose status changed last first. A run's status
-- time is when it ended, else when it started, else when it was made, as a task's status timestamp shows it.
CREATE INDEX runs_agent_tasks ON runs (agent_id, (COALESCE(completed_at, started_at, created_at)), id) WHERE parent_run_id IS NULL;
CREATE INDEX runs_network_tasks ON runs (network_id, (COALESCE(completed_at, started_at, created_at)), id) WHERE network_id IS NOT NULL;
