-- When a running process configured with this bootstrap key last reported it held (bootstrap keys only).
-- A bootstrap key nobody has held for a while is retired; until then, a rolling update that changes
-- AGENTPLANE_ADMIN_KEY keeps both keys working.
ALTER TABLE api_keys ADD COLUMN bootstrap_held_at timestamptz;
UPDATE api_keys SET bootstrap_held_at = now() WHERE bootstrap AND revoked_at IS NULL;
