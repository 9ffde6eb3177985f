-- contract: nothing. The usage ledger's source check is widened to take `memory` (the memory model's calls): the
-- release before never writes it, and the check refuses nothing that release writes; the rule cannot tell a wider
-- check from a new one, so the migration says so here.
ALTER TABLE usage_records DROP CONSTRAINT usage_records_source_check;
ALTER TABLE usage_records ADD CONSTRAINT usage_records_source_check CHECK (source IN ('run', 'extraction', 'judge', 'memory'));
