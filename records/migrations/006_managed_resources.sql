-- Agents and networks that a Kubernetes resource manages: the resource's kind, namespace, name and uid.
-- One live record per resource uid and project, so a controller that lost its status write finds the record
-- it made instead of making a second one.
ALTER TABLE agents ADD COLUMN managed_resource jsonb;
ALTER TABLE networks ADD COLUMN managed_resource jsonb;
CREATE UNIQUE INDEX agents_managed_uid ON agents (project_id, (managed_resource->>'uid')) WHERE managed_resource IS NOT NULL AND deleted_at IS NULL;
CREATE UNIQUE INDEX networks_managed_uid ON networks (project_id, (managed_resource->>'uid')) WHERE managed_resource IS NOT NULL AND deleted_at IS NULL;

-- The Temporal task queue of a network's dedicated workers; null: the shared workers.
ALTER TABLE network_versions ADD COLUMN worker_pool text;
