/**
 * Records a Kubernetes resource manages: the resource is the one source of truth, so a change or deletion
 * through the API that does not come from its controller is refused, naming the resource to edit instead.
 */
import type { ApiContext } from '../context.js';
import { ConflictError } from '../errors.js';
import type { ManagedResource } from '../../records/managed-resources.js';

const PLURAL: Record<ManagedResource['kind'], string> = { Agent: 'agents', AgentNetwork: 'agentnetworks' };

/** Whether the request says it comes from the managing resource (`Agentplane-Managed-By: kubernetes`). */
function fromManager(ctx: ApiContext): boolean {
  return ctx.get('agentplane-managed-by') === 'kubernetes';
}

/** Throws 409 `managed_by_kubernetes` when the record is managed and the request is not its controller's. */
export function refuseUnmanagedChange(
  ctx: ApiContext,
  record: { id: string; managed_resource: ManagedResource | null },
  what: 'Agent' | 'Network' | 'Schedule',
): void {
  const resource = record.managed_resource;
  if (!resource || fromManager(ctx)) return;
  const ref = `${PLURAL[resource.kind]}.agentplane.io/${resource.name}`;
  throw ConflictError(
    'managed_by_kubernetes',
    `${what} ${record.id} is managed by Kubernetes: edit the ${resource.kind} ${resource.namespace}/${resource.name} instead ` +
      `(kubectl edit ${ref} -n ${resource.namespace}), or delete that resource to delete the ${what.toLowerCase()}.`,
  );
}

/** The 409 for a second record of the same resource. */
export function managedResourceExists(resource: ManagedResource, existingId: string | undefined): Error {
  return ConflictError(
    'managed_resource_exists',
    `The ${resource.kind} ${resource.namespace}/${resource.name} (uid ${resource.uid}) already manages ${existingId ?? 'a record'} here.`,
    'managed_resource',
  );
}
