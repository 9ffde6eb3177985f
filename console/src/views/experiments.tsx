/**
 * The project's experiments, newest first: filtered by dataset, paged, the filter and page in the URL, statuses
 * read again while any runs; two finished ones on the same dataset are picked here to open their comparison.
 */
import { useState } from 'preact/hooks';
import { useLocation, useSearchParams } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { Pager, useCursor, type Page } from '../components/admin-pager';
import { usePollWhile } from '../components/files-status';
import { IdLink } from '../components/links';
import { StatusBadge } from '../components/runs-bars';
import { Async, EmptyState } from '../components/states';
import { formatCount, formatTime, formatUsd } from '../format';
import { useApi } from '../use-api';
import './admin.css';

type Experiment = Schemas['Experiment'];

const PAGE_SIZE = 25;
// An experiment takes seconds to minutes: reading the page again every two seconds follows it closely enough.
const REFRESH_MS = 2_000;

const ongoing = (experiment: Experiment) => experiment.status === 'queued' || experiment.status === 'running';

/** What an experiment changed in the version it ran, in a few words. */
function overridesOf(experiment: Experiment): string | null {
  const overrides = experiment.overrides;
  if (!overrides) return null;
  const parts = [
    overrides.model && `model ${overrides.model}`,
    overrides.instructions !== undefined && 'instructions',
    overrides.model_settings && 'model settings',
  ].filter((part): part is string => Boolean(part));
  return parts.length > 0 ? `with ${parts.join(', ')}` : null;
}

export default function ExperimentsView() {
  const [search, setSearch] = useSearchParams();
  const datasetId = search.get('dataset_id') || undefined;
  const cursor = useCursor();
  const experiments = useApi(
    (signal) =>
      api.GET('/v1/experiments', { params: { query: { limit: PAGE_SIZE, dataset_id: datasetId, ...cursor } }, signal }).then(unwrap),
    [datasetId, cursor.after, cursor.before],
  );
  const datasets = useApi((signal) => api.GET('/v1/datasets', { params: { query: { limit: 100 } }, signal }).then(unwrap), []);
  const running = experiments.data?.data.filter(ongoing).length ?? 0;
  usePollWhile(running > 0, experiments, REFRESH_MS);

  /** The filter changed: back to the first page. */
  const filter = (value: string) =>
    setSearch((previous) => {
      const next = new URLSearchParams(previous);
      if (value) next.set('dataset_id', value);
      else next.delete('dataset_id');
      next.delete('after');
      next.delete('before');
      return next;
    });

  return (
    <>
      <h1>Experiments</h1>
      <p class="muted">A dataset's items run against one version of an agent or a network, scored, with their cost.</p>
      <form class="row filters" onSubmit={(event) => event.preventDefault()} aria-label="Filter experiments">
        <div class="field">
          <label for="experiments-dataset">Dataset</label>
          <select id="experiments-dataset" value={datasetId ?? ''} onChange={(event) => filter(event.currentTarget.value)}>
            <option value="">Any dataset</option>
            {datasetId && !datasets.data?.data.some((d) => d.id === datasetId) && <option value={datasetId}>{datasetId}</option>}
            {(datasets.data?.data ?? []).map((dataset) => (
              <option key={dataset.id} value={dataset.id}>
                {dataset.name} ({dataset.id})
              </option>
            ))}
          </select>
        </div>
      </form>
      <p class="visually-hidden" role="status" aria-live="polite">
        {running > 0 ? `${running} experiments on this page are still running; their rows update by themselves.` : ''}
      </p>
      <Async loaded={experiments} what="experiments">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            <NoExperiments datasetId={datasetId} />
          ) : (
            <ExperimentTable page={page} datasetNames={new Map(datasets.data?.data.map((d) => [d.id, d.name]))} />
          )
        }
      </Async>
    </>
  );
}

function NoExperiments({ datasetId }: { datasetId: string | undefined }) {
  return (
    <EmptyState
      title={datasetId ? 'No experiments on this dataset yet' : 'No experiments yet'}
      method="POST"
      path="/v1/experiments"
      body={{ dataset_id: datasetId ?? 'ds_…', agent_id: 'agent_…' }}
    >
      <p>
        Start one with <code>agentplane eval --dataset {datasetId ?? 'ds_…'} --agent agent_…</code>, or with the API:
      </p>
    </EmptyState>
  );
}

function ExperimentTable({ page, datasetNames }: { page: Page & { data: Experiment[] }; datasetNames: Map<string, string> }) {
  const [picked, setPicked] = useState<Experiment[]>([]);
  const toggle = (experiment: Experiment, on: boolean) =>
    setPicked((previous) => (on ? [...previous, experiment].slice(-2) : previous.filter((e) => e.id !== experiment.id)));
  return (
    <>
      <ComparePicked picked={picked} listed={page.data} />
      <table class="listing">
        <caption class="visually-hidden">Experiments, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Compare</th>
            <th scope="col">Experiment</th>
            <th scope="col">Dataset</th>
            <th scope="col">Runs</th>
            <th scope="col">Tools</th>
            <th scope="col">Status</th>
            <th scope="col" class="number">
              Items
            </th>
            <th scope="col">Mean scores</th>
            <th scope="col" class="number">
              Cost
            </th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {page.data.map((experiment) => (
            <ExperimentRow
              key={experiment.id}
              experiment={experiment}
              datasetName={datasetNames.get(experiment.dataset_id)}
              picked={picked.some((e) => e.id === experiment.id)}
              onPick={(on) => toggle(experiment, on)}
            />
          ))}
        </tbody>
      </table>
      <Pager page={page} what="experiments" />
    </>
  );
}

function ExperimentRow({
  experiment,
  datasetName,
  picked,
  onPick,
}: {
  experiment: Experiment;
  datasetName: string | undefined;
  picked: boolean;
  onPick: (on: boolean) => void;
}) {
  const counts = experiment.item_counts;
  const ended = counts.completed + counts.failed + counts.cancelled;
  const overrides = overridesOf(experiment);
  const scores = Object.entries(experiment.summary.scores);
  return (
    <tr>
      <td>
        <input
          type="checkbox"
          checked={picked}
          disabled={ongoing(experiment)}
          title={ongoing(experiment) ? 'It can be compared once it has finished.' : undefined}
          aria-label={`Compare ${experiment.id}`}
          onChange={(event) => onPick(event.currentTarget.checked)}
        />
      </td>
      <th scope="row">
        <IdLink id={experiment.id} />
        {experiment.name && <div class="muted">{experiment.name}</div>}
      </th>
      <td>
        <IdLink id={experiment.dataset_id} />
        {datasetName && <div class="muted">{datasetName}</div>}
      </td>
      <td>
        <IdLink id={experiment.agent_id ?? experiment.network_id} /> version {experiment.version}
        {overrides && <div class="muted">{overrides}</div>}
      </td>
      <td>{experiment.tools}</td>
      <td>
        <StatusBadge status={experiment.status} />
      </td>
      <td class="number">
        {formatCount(ended)} of {formatCount(counts.total)}
        {(counts.failed > 0 || counts.cancelled > 0) && (
          <div class="muted">
            {[
              counts.failed > 0 && `${formatCount(counts.failed)} failed`,
              counts.cancelled > 0 && `${formatCount(counts.cancelled)} cancelled`,
            ]
              .filter(Boolean)
              .join(', ')}
          </div>
        )}
      </td>
      <td>
        {scores.length === 0 ? (
          <span class="muted">—</span>
        ) : (
          scores.map(([scorer, score]) => (
            <div key={scorer}>
              {scorer} {score.mean.toFixed(3)}
            </div>
          ))
        )}
      </td>
      <td class="number">{formatUsd(experiment.summary.cost_usd)}</td>
      <td>{formatTime(experiment.created_at)}</td>
    </tr>
  );
}

/**
 * Opens the comparison of the two picked experiments: the newer against the older, its baseline. `created_at` is in
 * whole seconds; two made in the same second are told apart by the list's order, newest first, which the API keeps
 * to the microsecond.
 */
function ComparePicked({ picked, listed }: { picked: Experiment[]; listed: Experiment[] }) {
  const [, navigate] = useLocation();
  const [first, second] = picked;
  const sameDataset = first !== undefined && second !== undefined && first.dataset_id === second.dataset_id;
  const listedAt = (experiment: Experiment) => listed.findIndex((e) => e.id === experiment.id);
  const open = () => {
    if (!first || !second) return;
    const [baseline, experiment] = [first, second].sort((a, b) => a.created_at - b.created_at || listedAt(b) - listedAt(a));
    navigate(`/experiments/${encodeURIComponent(experiment!.id)}/comparison?baseline=${encodeURIComponent(baseline!.id)}`);
  };
  let hint = 'Pick two finished experiments on the same dataset to compare them.';
  if (first && second && !sameDataset) hint = 'These two are on different datasets; a comparison needs two on the same one.';
  else if (first && second) hint = `The newer of the two is compared against the older.`;
  else if (first) hint = `Pick one more experiment on ${first.dataset_id}.`;
  return (
    <div class="row">
      <button type="button" disabled={!sameDataset} onClick={open}>
        Compare the picked two
      </button>
      <span class="muted" role="status" aria-live="polite">
        {hint}
      </span>
    </div>
  );
}
