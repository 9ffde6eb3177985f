-- A run's steps' payloads (the messages they added, the tool calls' arguments) age like the run-event log: the
-- maintenance schedule clears them a set time after the run ended (AGENTPLANE_RETENTION_STEP_PAYLOADS_DAYS).
-- The run, its input and output, and each step's kind, timing, usage, cost and error stay.
ALTER TABLE run_steps ADD COLUMN payload_expired boolean NOT NULL DEFAULT false;
ALTER TABLE runs ADD COLUMN payloads_expired_at timestamptz;
CREATE INDEX runs_payloads_kept ON runs (completed_at) WHERE payloads_expired_at IS NULL AND completed_at IS NOT NULL;

-- An idempotency key's stored answer counts until its own end, set by the API that stored it
-- (AGENTPLANE_IDEMPOTENCY_KEY_HOURS), so that the API and the maintenance schedule need not agree on a window.
ALTER TABLE idempotency_keys ADD COLUMN expires_at timestamptz NOT NULL DEFAULT now() + interval '24 hours';
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
