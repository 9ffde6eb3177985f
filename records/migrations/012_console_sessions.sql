-- Sessions of the web console: a browser signs in with an API key once and then holds a cookie whose token
-- stands for that key. Only hashes of the token and of its CSRF token are stored, as for API keys.
CREATE TABLE console_sessions (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects(id),
  api_key_id  text NOT NULL REFERENCES api_keys(id),
  token_hash  bytea NOT NULL UNIQUE,
  csrf_hash   bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  ended_at    timestamptz
);
CREATE INDEX console_sessions_api_key ON console_sessions (api_key_id);
-- What maintenance deletes: sessions past their end.
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);
