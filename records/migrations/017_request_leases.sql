-- API replicas lease a key's requests a few at a time and serve them from memory; the row keeps what was
-- granted in the window. The last lease's grant is kept beside it so that the upsert granting it can say how
-- many it granted, computed from the row as it stood under the upsert's lock.
ALTER TABLE api_key_request_windows ADD COLUMN last_granted integer NOT NULL DEFAULT 0;
