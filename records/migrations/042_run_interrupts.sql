-- A run an `interrupt` run replaces is marked in the transaction that admits its replacement, and the mark is
-- cleared once Temporal has its cancellation (api/routes/runs/admission.ts `interruptRuns`). A mark still set
-- (Temporal was unreachable just then) is taken up by the maintenance round (records/runs.ts `interruptsLeft`),
-- so an interrupted run is cancelled however long Temporal was away. Only marked runs still to end are indexed.
ALTER TABLE runs ADD COLUMN interrupt_requested_at timestamptz;
CREATE INDEX runs_interrupt_requested ON runs (interrupt_requested_at)
  WHERE interrupt_requested_at IS NOT NULL AND status IN ('queued', 'in_progress');
