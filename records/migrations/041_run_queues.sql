-- A queued run's admission and the wake of the next one as a run ends (records/runs.ts `admissionOf`,
-- `nextQueuedRun`, records/threads.ts) ask whether its agent, network or thread has a run ahead: each is a probe of
-- one of these indexes, so a queue of thousands of runs, or a thread of thousands of ended ones, costs each run no
-- more than a short one.
CREATE INDEX runs_agent_in_progress ON runs (agent_id) WHERE status = 'in_progress' AND parent_run_id IS NULL AND agent_id IS NOT NULL;
CREATE INDEX runs_network_in_progress ON runs (network_id) WHERE status = 'in_progress' AND parent_run_id IS NULL AND network_id IS NOT NULL;
CREATE INDEX runs_thread_active ON runs (thread_id, created_at, id) WHERE status IN ('queued', 'in_progress') AND thread_id IS NOT NULL;
