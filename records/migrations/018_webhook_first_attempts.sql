-- A delivery's first attempt is made by a dispatcher straight away, and only a delivery that fails it gets a
-- workflow for its retries. The dispatcher making the attempt holds the delivery until claimed_until; past
-- it (the dispatcher died), another makes the attempt. started_at is set once the first attempt succeeded
-- or the retries' workflow was started.
ALTER TABLE webhook_deliveries ADD COLUMN claimed_until timestamptz;
