/** A table of runs (an agent's or a network's history), each id a link to the run view. */
import type { Schemas } from '../api';
import { formatCount, formatDuration, formatTime, formatUsd } from '../format';
import { IdLink } from './links';

type Run = Schemas['RunSummary'];

const duration = (run: Run) => (run.started_at && run.completed_at ? formatDuration((run.completed_at - run.started_at) * 1000) : '—');

export function RunsTable({ runs, caption, version }: { runs: Run[]; caption: string; version: 'agent' | 'network' }) {
  return (
    <table class="records">
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Status</th>
          <th scope="col">Version</th>
          <th scope="col">Model</th>
          <th scope="col" class="number">
            Tokens
          </th>
          <th scope="col" class="number">
            Cost
          </th>
          <th scope="col">Duration</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <tr key={run.id}>
            <th scope="row">
              <IdLink id={run.id} />
            </th>
            <td>
              <span class={`status status-${run.status}`}>{run.status}</span>
            </td>
            <td>{(version === 'agent' ? run.agent_version : run.network_version) ?? '—'}</td>
            <td>{run.resolved_model ?? run.model}</td>
            <td class="number">{formatCount(run.usage.input_tokens + run.usage.output_tokens)}</td>
            <td class="number">{formatUsd(run.cost)}</td>
            <td>{duration(run)}</td>
            <td>{formatTime(run.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
