-- What the maintenance schedule expires: the deliveries that ended longer ago than their retention, found by when
-- they ended. (A run's event log is found through its run.)
CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (completed_at) WHERE status <> 'pending';
CREATE INDEX runs_ended ON runs (completed_at) WHERE completed_at IS NOT NULL;
