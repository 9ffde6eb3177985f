/** One agent: what it is, its versions, its recent runs, and a box to run it with the answer streaming in. */
import { api, unwrap, type Schemas } from '../api';
import { DeleteControl, Facts, MetadataList, ToolsTable, VersionsTable } from '../components/agents-detail';
import { ManagedNotice } from '../components/agents-managed';
import { Pager, useCursor } from '../components/agents-paging';
import { RunBox } from '../components/agents-run-box';
import { RunsTable } from '../components/agents-runs-table';
import { Async, EmptyState } from '../components/states';
import { formatTime } from '../format';
import { useApi } from '../use-api';
import './agents.css';

export default function AgentView({ params }: { params: { id: string } }) {
  const id = params.id;
  const agent = useApi((signal) => api.GET('/v1/agents/{id}', { params: { path: { id } }, signal }).then(unwrap), [id]);
  return (
    <>
      {!agent.data && (
        <h1>
          Agent <code>{id}</code>
        </h1>
      )}
      <Async loaded={agent} what="the agent">
        {(loaded) => <AgentDetail agent={loaded} />}
      </Async>
    </>
  );
}

function AgentDetail({ agent }: { agent: Schemas['Agent'] }) {
  const cursor = useCursor('runs_');
  const runs = useApi(
    (signal) =>
      api.GET('/v1/agents/{id}/runs', { params: { path: { id: agent.id }, query: { limit: 20, ...cursor } }, signal }).then(unwrap),
    [agent.id, cursor.after, cursor.before],
  );
  const settings = agent.model_settings ?? {};
  return (
    <>
      <h1>Agent {agent.name}</h1>
      {agent.managed_resource ? (
        <ManagedNotice resource={agent.managed_resource} what="agent" />
      ) : (
        <DeleteControl
          what="agent"
          name={agent.name}
          back="/agents"
          remove={() => api.DELETE('/v1/agents/{id}', { params: { path: { id: agent.id } } }).then(unwrap)}
        />
      )}
      <Facts
        rows={[
          ['ID', <code>{agent.id}</code>],
          ['Description', agent.description],
          ['Model', <code>{agent.model}</code>],
          [
            'Model settings',
            Object.keys(settings).length
              ? Object.entries(settings)
                  .map(([k, v]) => `${k} ${v}`)
                  .join(', ')
              : 'The model’s defaults',
          ],
          ['Version', agent.version],
          ['Concurrency', agent.concurrency],
          ['Max steps', agent.max_steps],
          ['Created', formatTime(agent.created_at)],
          ['Updated', formatTime(agent.updated_at)],
        ]}
      />
      <RunBox key={agent.id} target={{ kind: 'agent', id: agent.id }} onEnded={runs.reload} />
      <h2>Instructions</h2>
      {agent.instructions ? <pre class="instructions">{agent.instructions}</pre> : <p class="muted">No instructions.</p>}
      <h2>Tools</h2>
      <ToolsTable tools={agent.tools} />
      <h2>Metadata</h2>
      <MetadataList metadata={agent.metadata} />
      <h2>Recent runs</h2>
      <Async loaded={runs} what="the agent's runs">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            <EmptyState title="No runs yet" method="POST" path={`/v1/agents/${agent.id}/run`} body={{ input: 'Hello!' }}>
              <p>Run it with the box above, or with the API:</p>
            </EmptyState>
          ) : (
            <>
              <RunsTable runs={page.data} caption="Runs of this agent, newest first" version="agent" />
              <Pager page={page} cursor={cursor} prefix="runs_" label="Pages of runs" />
            </>
          )
        }
      </Async>
      <h2>Versions</h2>
      <p class="muted">Each update makes a new version; a run keeps the version it started with.</p>
      <VersionsTable current={agent.version} updatedAt={agent.updated_at} runs={runs.data?.data ?? []} of="agent" />
    </>
  );
}
