/** The project's agent networks, newest first, a page at a time. */
import { Link } from 'wouter-preact';
import { api, unwrap } from '../api';
import { ManagedMarker } from '../components/agents-managed';
import { ManagedByFilter, useManagedBy } from '../components/agents-managed-filter';
import { Pager, useCursor } from '../components/agents-paging';
import { Async, EmptyState } from '../components/states';
import { formatTime } from '../format';
import { useApi } from '../use-api';
import './agents.css';

export default function NetworksView() {
  const cursor = useCursor();
  const managedBy = useManagedBy();
  const loaded = useApi(
    (signal) => api.GET('/v1/networks', { params: { query: { limit: 20, ...cursor, managed_by: managedBy } }, signal }).then(unwrap),
    [cursor.after, cursor.before, managedBy],
  );
  return (
    <>
      <h1>Networks</h1>
      <Async loaded={loaded} what="networks">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before && !managedBy ? (
            <EmptyState
              title="No networks yet"
              method="POST"
              path="/v1/networks"
              body={{ name: 'research-desk', members: ['agent_…', 'agent_…'], router: { type: 'sequential' } }}
            >
              <p>
                A network runs several agents on one task, in order, by a supervisor's choice, or by handoffs. Create one from agents' ids:
              </p>
            </EmptyState>
          ) : (
            <>
              <ManagedByFilter id="networks-managed-by" />
              {page.data.length === 0 ? (
                <p class="muted">No networks match.</p>
              ) : (
                <table class="records">
                  <caption class="visually-hidden">The project's networks</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Router</th>
                      <th scope="col" class="number">
                        Members
                      </th>
                      <th scope="col" class="number">
                        Version
                      </th>
                      <th scope="col">Managed by</th>
                      <th scope="col">Created</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.data.map((network) => (
                      <tr key={network.id}>
                        <th scope="row">
                          <Link href={`/networks/${encodeURIComponent(network.id)}`}>{network.name}</Link>
                          <div class="muted id">{network.id}</div>
                        </th>
                        <td>{network.router.type}</td>
                        <td class="number">{network.members.length}</td>
                        <td class="number">{network.version}</td>
                        <td>
                          <ManagedMarker resource={network.managed_resource} />
                        </td>
                        <td>{formatTime(network.created_at)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              <Pager page={page} cursor={cursor} label="Pages of networks" />
            </>
          )
        }
      </Async>
    </>
  );
}
