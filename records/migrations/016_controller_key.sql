-- The Kubernetes controller's key (AGENTPLANE_CONTROLLER_KEY on the API): registered at start with the agents
-- scopes only, and the one key that may put a network on a worker pool the controller runs. Like a bootstrap
-- key, it stays live while an API process configured with it reports it held, and for a while after, so a
-- rolling update that changes it keeps both keys working.
ALTER TABLE api_keys ADD COLUMN controller boolean NOT NULL DEFAULT false;
ALTER TABLE api_keys ADD COLUMN controller_held_at timestamptz;
