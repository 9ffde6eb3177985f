/** One agent network: its members in order, its router, its recent runs, and a box to run it. */
import { Link } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { DeleteControl, Facts, MetadataList, VersionsTable } from '../components/agents-detail';
import { ManagedNotice } from '../components/agents-managed';
import { Pager, useCursor } from '../components/agents-paging';
import { RunBox } from '../components/agents-run-box';
import { RunsTable } from '../components/agents-runs-table';
import { IdLink } from '../components/links';
import { Async, EmptyState } from '../components/states';
import { formatTime } from '../format';
import { useApi } from '../use-api';
import './agents.css';

type Network = Schemas['Network'];

const ROUTERS: Record<Network['router']['type'], string> = {
  sequential: 'Sequential: every member in order, each given the previous one’s output.',
  supervisor: 'Supervisor: a router model picks the next member, or finishes, each time with a reason.',
  handoff: 'Handoff: the first member starts; a member passes the task on with the handoff tool.',
};

export default function NetworkView({ params }: { params: { id: string } }) {
  const id = params.id;
  const network = useApi((signal) => api.GET('/v1/networks/{id}', { params: { path: { id } }, signal }).then(unwrap), [id]);
  return (
    <>
      {!network.data && (
        <h1>
          Network <code>{id}</code>
        </h1>
      )}
      <Async loaded={network} what="the network">
        {(loaded) => <NetworkDetail network={loaded} />}
      </Async>
    </>
  );
}

function NetworkDetail({ network }: { network: Network }) {
  const cursor = useCursor('runs_');
  const runs = useApi(
    (signal) =>
      api.GET('/v1/networks/{id}/runs', { params: { path: { id: network.id }, query: { limit: 20, ...cursor } }, signal }).then(unwrap),
    [network.id, cursor.after, cursor.before],
  );
  const members = useApi(
    (signal) =>
      Promise.all(
        network.members.map((id) =>
          api
            .GET('/v1/agents/{id}', { params: { path: { id } }, signal })
            .then((result) => (result.response.ok ? unwrap(result) : undefined)),
        ),
      ),
    [network.members.join(',')],
  );
  const names = Object.fromEntries((members.data ?? []).flatMap((agent) => (agent ? [[agent.id, agent.name]] : [])));
  return (
    <>
      <h1>Network {network.name}</h1>
      {network.managed_resource ? (
        <ManagedNotice resource={network.managed_resource} what="network" />
      ) : (
        <DeleteControl
          what="network"
          name={network.name}
          back="/networks"
          remove={() => api.DELETE('/v1/networks/{id}', { params: { path: { id: network.id } } }).then(unwrap)}
        />
      )}
      <Facts
        rows={[
          ['ID', <code>{network.id}</code>],
          ['Description', network.description],
          ['Version', network.version],
          ['Max hops', network.max_hops],
          ['Concurrency', network.concurrency],
          ['Worker pool', network.worker_pool ? <code>{network.worker_pool}</code> : 'The shared workers'],
          ['Created', formatTime(network.created_at)],
          ['Updated', formatTime(network.updated_at)],
        ]}
      />
      <div class="columns">
        <section aria-labelledby="members-heading">
          <h2 id="members-heading">Members</h2>
          <Members ids={network.members} agents={members.data} />
        </section>
        <section aria-labelledby="router-heading">
          <h2 id="router-heading">Router</h2>
          <Router router={network.router} />
        </section>
      </div>
      <RunBox key={network.id} target={{ kind: 'network', id: network.id }} onEnded={runs.reload} names={names} />
      <h2>Recent runs</h2>
      <Async loaded={runs} what="the network's runs">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            <EmptyState title="No runs yet" method="POST" path={`/v1/networks/${network.id}/run`} body={{ input: 'Hello!' }}>
              <p>Run it with the box above, or with the API:</p>
            </EmptyState>
          ) : (
            <>
              <RunsTable runs={page.data} caption="Runs of this network, newest first" version="network" />
              <Pager page={page} cursor={cursor} prefix="runs_" label="Pages of runs" />
            </>
          )
        }
      </Async>
      <h2>Versions</h2>
      <p class="muted">Each update makes a new version; a run keeps the version it started with.</p>
      <VersionsTable current={network.version} updatedAt={network.updated_at} runs={runs.data?.data ?? []} of="network" />
      <h2>Metadata</h2>
      <MetadataList metadata={network.metadata} />
    </>
  );
}

/** The members in order, by name; a deleted member stays listed by its id. */
function Members({ ids, agents }: { ids: string[]; agents?: (Schemas['Agent'] | undefined)[] }) {
  return (
    <ol class="members">
      {ids.map((id, index) => {
        const agent = agents?.[index];
        return (
          <li key={id}>
            {agent ? (
              <>
                <Link href={`/agents/${encodeURIComponent(id)}`}>{agent.name}</Link> <span class="muted">({agent.model})</span>
              </>
            ) : (
              <>
                <IdLink id={id} />
                {agents && <span class="muted"> (deleted)</span>}
              </>
            )}
          </li>
        );
      })}
    </ol>
  );
}

function Router({ router }: { router: Network['router'] }) {
  return (
    <>
      <p>{ROUTERS[router.type]}</p>
      {router.type === 'supervisor' && 'agent_id' in router && <Facts rows={[['Router agent', <IdLink id={router.agent_id} />]]} />}
      {router.type === 'supervisor' && 'instructions' in router && (
        <>
          <Facts rows={[['Router model', <code>{router.model ?? 'auto'}</code>]]} />
          <h3>Router instructions</h3>
          <pre class="instructions">{router.instructions}</pre>
        </>
      )}
    </>
  );
}
