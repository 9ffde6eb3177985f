-- The webhook dispatcher is woken only by events that an enabled endpoint of their project subscribes to.
-- The others (most runs' endings, in projects with no endpoints) are marked dispatched by its next poll, many
-- at once, instead of costing each a pass of the dispatcher in the worker.
CREATE FUNCTION agentplane_notify_subscribed_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM recorded e
    JOIN webhook_endpoints w ON w.project_id = e.project_id AND w.status = 'enabled'
      AND (e.type = ANY(w.event_types) OR '*' = ANY(w.event_types))
  ) THEN
    PERFORM pg_notify('agentplane_webhooks', '');
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER events_wake_dispatcher AFTER INSERT ON events
  REFERENCING NEW TABLE AS recorded FOR EACH STATEMENT EXECUTE FUNCTION agentplane_notify_subscribed_events();
