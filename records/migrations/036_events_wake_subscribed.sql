-- The webhook dispatcher is woken only by events that an enabled endpoint of their project subscribes to.
-- The others (most runs' endings, in projects with no endpoints) are marked dispatched by its next poll, many
-- at once, instead of costing each a pass of the dispatcher in the worker.

-- Whether an endpoint subscribed to `event_types` takes an event of `event_type`: the one rule, for the
-- dispatcher's pass (records/webhook-deliveries.ts) and for the trigger that wakes it.
CREATE FUNCTION agentplane_endpoint_takes(event_types text[], event_type text) RETURNS boolean
  LANGUAGE sql IMMUTABLE AS $$ SELECT event_type = ANY(event_types) OR '*' = ANY(event_types) $$;

CREATE FUNCTION agentplane_notify_subscribed_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM recorded e
    JOIN webhook_endpoints w ON w.project_id = e.project_id AND w.status = 'enabled'
      AND agentplane_endpoint_takes(w.event_types, e.type)
  ) THEN
    PERFORM pg_notify('agentplane_webhooks', '');
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER events_wake_dispatcher AFTER INSERT ON events
  REFERENCING NEW TABLE AS recorded FOR EACH STATEMENT EXECUTE FUNCTION agentplane_notify_subscribed_events();
