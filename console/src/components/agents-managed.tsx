/** The notice on an agent or a network that Kubernetes manages: read-only here, edit its resource instead. */
import type { Schemas } from '../api';

const RESOURCE: Record<Schemas['ManagedResource']['kind'], string> = {
  Agent: 'agents.agentplane.io',
  AgentNetwork: 'agentnetworks.agentplane.io',
};

export function ManagedNotice({ resource, what }: { resource: Schemas['ManagedResource']; what: 'agent' | 'network' }) {
  return (
    <section class="notice" aria-label="Managed by Kubernetes">
      <p>
        <strong>Managed by Kubernetes.</strong> This {what} is read-only here: edit the {resource.kind}{' '}
        <code>
          {resource.namespace}/{resource.name}
        </code>{' '}
        instead, or delete that resource to delete the {what}.
      </p>
      <pre class="curl">
        <code>
          kubectl edit {RESOURCE[resource.kind]}/{resource.name} -n {resource.namespace}
        </code>
      </pre>
    </section>
  );
}

/** The marker in a list: words, not only a colour. */
export function ManagedMarker({ resource }: { resource: Schemas['ManagedResource'] | null }) {
  if (!resource) return <span class="muted">—</span>;
  return (
    <span class="badge" title={`${resource.kind} ${resource.namespace}/${resource.name}`}>
      Kubernetes{' '}
      <span class="muted">
        {resource.namespace}/{resource.name}
      </span>
    </span>
  );
}
