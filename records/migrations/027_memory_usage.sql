-- contract: nothing. The usage ledger's source check is widened to take `memory` (the memory model's calls): the
-- release before never writes it, and the check refuses nothing that release writes; the rule cannot tell a wider
-- check from a new one, so the migration says so here. The check's name is whatever PostgreSQL gave it.
DO $$
DECLARE
  found text;
BEGIN
  FOR found IN
    SELECT conname FROM pg_constraint
    WHERE conrelid = 'usage_records'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%source%'
  LOOP
    EXECUTE format('ALTER TABLE usage_records DROP CONSTRAINT %I', found);
  END LOOP;
END $$;
ALTER TABLE usage_records ADD CONSTRAINT usage_records_source CHECK (source IN ('run', 'extraction', 'judge', 'memory'));
