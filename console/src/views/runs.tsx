/** The project's runs, newest first: filtered by status and agent, paged, every filter and page in the URL. */
import { useSearchParams } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { useApi } from '../use-api';
import { Async, EmptyState } from '../components/states';
import { IdLink } from '../components/links';
import { formatCount, formatDuration, formatTime, formatUsd } from '../format';
import { StatusBadge } from '../components/runs-bars';
import { modelOf, runDurationMs } from '../components/runs-tree';
import './runs.css';

type RunStatus = Schemas['RunStatus'];
const STATUSES: RunStatus[] = ['queued', 'in_progress', 'requires_action', 'completed', 'failed', 'cancelled'];
const PAGE_SIZE = 50;

export default function RunsView() {
  const [search, setSearch] = useSearchParams();
  const status = STATUSES.find((s) => s === search.get('status'));
  const agentId = search.get('agent_id') ?? undefined;
  const after = search.get('after') ?? undefined;
  const before = search.get('before') ?? undefined;

  const runs = useApi(
    async (signal) =>
      unwrap(
        await api.GET('/v1/runs', {
          params: {
            query: {
              limit: PAGE_SIZE,
              status: status ? [status] : undefined,
              agent_id: agentId,
              after,
              before: after ? undefined : before,
            },
          },
          signal,
        }),
      ),
    [status, agentId, after, before],
  );
  const agents = useApi(async (signal) => unwrap(await api.GET('/v1/agents', { params: { query: { limit: 100 } }, signal })), []);

  /** A filter changed: back to the first page. */
  const filter = (name: 'status' | 'agent_id', value: string) =>
    setSearch((previous) => {
      const next = new URLSearchParams(previous);
      if (value) next.set(name, value);
      else next.delete(name);
      next.delete('after');
      next.delete('before');
      return next;
    });
  const page = (cursor: 'after' | 'before', id: string) =>
    setSearch((previous) => {
      const next = new URLSearchParams(previous);
      next.delete('after');
      next.delete('before');
      next.set(cursor, id);
      return next;
    });

  const filtered = Boolean(status || agentId);
  return (
    <>
      <h1>Runs</h1>
      <form class="row" onSubmit={(event) => event.preventDefault()} aria-label="Filter runs">
        <div class="field">
          <label for="runs-status">Status</label>
          <select
            id="runs-status"
            value={status ?? ''}
            onChange={(event) => filter('status', (event.currentTarget as HTMLSelectElement).value)}
          >
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="runs-agent">Agent</label>
          <select
            id="runs-agent"
            value={agentId ?? ''}
            onChange={(event) => filter('agent_id', (event.currentTarget as HTMLSelectElement).value)}
          >
            <option value="">Any agent</option>
            {agentId && !agents.data?.data.some((a) => a.id === agentId) && <option value={agentId}>{agentId}</option>}
            {(agents.data?.data ?? []).map((agent) => (
              <option key={agent.id} value={agent.id}>
                {agent.name} ({agent.id})
              </option>
            ))}
          </select>
        </div>
      </form>
      <Async loaded={runs} what="runs">
        {(list) =>
          list.data.length === 0 ? (
            filtered || after || before ? (
              <EmptyState
                title="No runs match"
                path={`/v1/runs?${new URLSearchParams(Object.entries({ status, agent_id: agentId }).filter((e): e is [string, string] => Boolean(e[1]))).toString()}`}
              >
                <p>No run of this project matches these filters. The API lists them the same way:</p>
              </EmptyState>
            ) : (
              <EmptyState
                title="No runs yet"
                method="POST"
                path={`/v1/agents/${agents.data?.data[0]?.id ?? 'AGENT_ID'}/run`}
                body={{ input: 'Hello' }}
              >
                <p>Runs appear here once an agent or a network is run. Start one:</p>
              </EmptyState>
            )
          ) : (
            <>
              <table aria-busy={runs.loading}>
                <caption class="visually-hidden">Runs, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Run</th>
                    <th scope="col">Agent or network</th>
                    <th scope="col">Status</th>
                    <th scope="col">Model</th>
                    <th scope="col" class="number">
                      Tokens
                    </th>
                    <th scope="col" class="number">
                      Cost
                    </th>
                    <th scope="col">Created</th>
                    <th scope="col" class="number">
                      Duration
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.map((run) => (
                    <RunRow key={run.id} run={run} />
                  ))}
                </tbody>
              </table>
              <nav class="pager" aria-label="Pages of runs">
                <button
                  type="button"
                  class="plain"
                  disabled={!(after || (before && list.has_more))}
                  onClick={() => list.first_id && page('before', list.first_id)}
                >
                  Newer
                </button>
                <button
                  type="button"
                  class="plain"
                  disabled={!(list.has_more || before) || !list.last_id}
                  onClick={() => list.last_id && page('after', list.last_id)}
                >
                  Older
                </button>
              </nav>
            </>
          )
        }
      </Async>
    </>
  );
}

function RunRow({ run }: { run: Schemas['RunSummary'] }) {
  const duration = runDurationMs(run);
  return (
    <tr>
      <th scope="row">
        <IdLink id={run.id} />
      </th>
      <td>
        {run.network_id ? <IdLink id={run.network_id} /> : <IdLink id={run.agent_id} />}
        {run.parent_run_id && (
          <span class="muted">
            {' '}
            hop of <IdLink id={run.parent_run_id} />
          </span>
        )}
      </td>
      <td>
        <StatusBadge status={run.status} />
      </td>
      <td>{modelOf(run) ?? <span class="muted">—</span>}</td>
      <td class="number">{formatCount(run.usage.input_tokens + run.usage.output_tokens)}</td>
      <td class="number">{formatUsd(run.cost)}</td>
      <td>{formatTime(run.created_at)}</td>
      <td class="number">{duration === null ? '—' : formatDuration(duration)}</td>
    </tr>
  );
}
