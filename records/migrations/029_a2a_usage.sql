-- contract: nothing. The usage ledger's source check is widened to take `a2a` (what a remote agent called over A2A
-- reported its task cost): the release before never writes it, and the check refuses nothing that release writes;
-- the rule cannot tell a wider check from a new one, so the migration says so here.
ALTER TABLE usage_records DROP CONSTRAINT usage_records_source;
ALTER TABLE usage_records ADD CONSTRAINT usage_records_source CHECK (source IN ('run', 'extraction', 'judge', 'memory', 'a2a'));
-- The run on the remote side whose cost the row charges.
ALTER TABLE usage_records ADD COLUMN remote_run_id text;
-- A step's remote cost is charged once, however often its call is retried.
CREATE UNIQUE INDEX usage_records_a2a_step ON usage_records (run_id, step_index, created_at) WHERE source = 'a2a';
-- The remote agent's task a tool call started ({task_id, context_id, run_id?}): a retried call follows it.
ALTER TABLE run_steps ADD COLUMN remote_task jsonb;
