/** The project's agents, newest first, a page at a time. */
import { Link } from 'wouter-preact';
import { api, unwrap } from '../api';
import { ManagedMarker } from '../components/agents-managed';
import { ManagedByFilter, useManagedBy } from '../components/agents-managed-filter';
import { Pager, useCursor } from '../components/agents-paging';
import { Async, EmptyState } from '../components/states';
import { formatTime } from '../format';
import { useApi } from '../use-api';
import './agents.css';

export const EXAMPLE_AGENT = { name: 'support', model: 'auto', instructions: 'Answer briefly.' };

export default function AgentsView() {
  const cursor = useCursor();
  const managedBy = useManagedBy();
  const loaded = useApi(
    (signal) => api.GET('/v1/agents', { params: { query: { limit: 20, ...cursor, managed_by: managedBy } }, signal }).then(unwrap),
    [cursor.after, cursor.before, managedBy],
  );
  return (
    <>
      <h1>Agents</h1>
      <Async loaded={loaded} what="agents">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before && !managedBy ? (
            <EmptyState title="No agents yet" method="POST" path="/v1/agents" body={EXAMPLE_AGENT}>
              <p>An agent is a model with instructions and tools. Create one with the API:</p>
            </EmptyState>
          ) : (
            <>
              <ManagedByFilter id="agents-managed-by" />
              {page.data.length === 0 ? (
                <p class="muted">No agents match.</p>
              ) : (
                <table class="records">
                  <caption class="visually-hidden">The project's agents</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Model</th>
                      <th scope="col" class="number">
                        Version
                      </th>
                      <th scope="col" class="number">
                        Tools
                      </th>
                      <th scope="col">Managed by</th>
                      <th scope="col">Created</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.data.map((agent) => (
                      <tr key={agent.id}>
                        <th scope="row">
                          <Link href={`/agents/${encodeURIComponent(agent.id)}`}>{agent.name}</Link>
                          <div class="muted id">{agent.id}</div>
                        </th>
                        <td>{agent.model}</td>
                        <td class="number">{agent.version}</td>
                        <td class="number">{agent.tools.length}</td>
                        <td>
                          <ManagedMarker resource={agent.managed_resource} />
                        </td>
                        <td>{formatTime(agent.created_at)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              <Pager page={page} cursor={cursor} label="Pages of agents" />
            </>
          )
        }
      </Async>
    </>
  );
}
