-- The W3C trace context of the request that made a run, an upload or an event (null when tracing is off): the
-- workers that carry the work on make their spans children of it, so that a request is one trace however many
-- workers and retries it crosses. A run's holds the span id of its own `invoke_agent` span as well.
ALTER TABLE runs ADD COLUMN trace_context jsonb;
ALTER TABLE files ADD COLUMN trace_context jsonb;
ALTER TABLE events ADD COLUMN trace_context jsonb;
