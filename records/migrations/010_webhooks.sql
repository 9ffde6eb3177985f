-- Webhook endpoints, their deliveries (one per event and endpoint, and one per redelivery) and each
-- delivery's attempts; events are listed by type and by subject, and their recording wakes the dispatcher.
CREATE TABLE webhook_endpoints (
  id                          text PRIMARY KEY,
  project_id                  text NOT NULL REFERENCES projects(id),
  url                         text NOT NULL,
  event_types                 text[] NOT NULL,
  description                 text,
  metadata                    jsonb NOT NULL DEFAULT '{}',
  -- Kept as given: delivery signs with it. Shown once, when created or rotated.
  secret                      text NOT NULL,
  previous_secret             text,
  previous_secret_expires_at  timestamptz,
  status                      text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  disabled_reason             text CHECK (disabled_reason IN ('requested', 'failing')),
  -- Deliveries in a row that used up their attempts; any delivered one sets it back to zero.
  consecutive_failures        integer NOT NULL DEFAULT 0,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_project_page ON webhook_endpoints (project_id, created_at, id);
CREATE INDEX webhook_endpoints_enabled ON webhook_endpoints (project_id) WHERE status = 'enabled';

CREATE TABLE webhook_deliveries (
  id               text PRIMARY KEY,
  project_id       text NOT NULL,
  endpoint_id      text NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_id         text NOT NULL REFERENCES events(id),
  redelivery_of    text REFERENCES webhook_deliveries(id) ON DELETE SET NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  -- Set once its workflow is started: until then the dispatcher keeps trying.
  started_at       timestamptz,
  completed_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now()
);
-- One first delivery per event and endpoint, however often the dispatcher sees the event.
CREATE UNIQUE INDEX webhook_deliveries_first ON webhook_deliveries (event_id, endpoint_id) WHERE redelivery_of IS NULL;
CREATE INDEX webhook_deliveries_endpoint_page ON webhook_deliveries (endpoint_id, created_at, id);
CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries (created_at) WHERE started_at IS NULL;

CREATE TABLE webhook_delivery_attempts (
  delivery_id      text NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  attempt          integer NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  response_status  integer,
  error            text,
  duration_ms      integer NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);

CREATE INDEX events_undelivered ON events (created_at, id) WHERE delivered_at IS NULL;
CREATE INDEX events_project_type_page ON events (project_id, type, created_at, id);
CREATE INDEX events_project_subject ON events (project_id, (data->>'id'));

CREATE FUNCTION agentplane_notify_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('agentplane_webhooks', '');
  RETURN NULL;
END $$;
CREATE TRIGGER events_wake_dispatcher AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION agentplane_notify_webhooks();
CREATE TRIGGER deliveries_wake_dispatcher AFTER INSERT ON webhook_deliveries FOR EACH STATEMENT EXECUTE FUNCTION agentplane_notify_webhooks();
