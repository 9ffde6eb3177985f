/** One experiment: its summary, its items with their scores, output, cost and latency, and a way to compare it with another. */
import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { Pager, useCursor } from '../components/admin-pager';
import { IdLink } from '../components/links';
import { Async } from '../components/states';
import { formatCount, formatDuration, formatTime, formatUsd } from '../format';
import { useApi } from '../use-api';
import './admin.css';

const PAGE_SIZE = 50;

export default function ExperimentView({ params }: { params: { id: string } }) {
  const experiment = useApi(
    (signal) => api.GET('/v1/experiments/{id}', { params: { path: { id: params.id } }, signal }).then(unwrap),
    [params.id],
  );
  return (
    <>
      <p>
        <Link href="/experiments">← Experiments</Link>
      </p>
      <Async loaded={experiment} what="the experiment">
        {(data) => <Experiment experiment={data} reload={experiment.reload} />}
      </Async>
    </>
  );
}

function Experiment({ experiment, reload }: { experiment: Schemas['Experiment']; reload: () => void }) {
  const cursor = useCursor();
  const items = useApi(
    (signal) =>
      api
        .GET('/v1/experiments/{id}/items', { params: { path: { id: experiment.id }, query: { limit: PAGE_SIZE, ...cursor } }, signal })
        .then(unwrap),
    [experiment.id, experiment.status, cursor.after, cursor.before],
  );
  const { item_counts: counts, summary } = experiment;
  const ongoing = experiment.status === 'queued' || experiment.status === 'running';
  return (
    <>
      <h1>
        Experiment <code class="id">{experiment.id}</code> {experiment.name && <span class="muted">{experiment.name}</span>}
      </h1>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          {experiment.status}
          {ongoing && (
            <>
              {' '}
              <button type="button" class="plain" onClick={reload}>
                Refresh
              </button>
            </>
          )}
        </dd>
        <dt>Runs</dt>
        <dd>
          <IdLink id={experiment.agent_id ?? experiment.network_id} /> version {experiment.version}
          {experiment.overrides?.model && <> with {experiment.overrides.model}</>}, tools {experiment.tools}
        </dd>
        <dt>Dataset</dt>
        <dd>
          <IdLink id={experiment.dataset_id} />
        </dd>
        <dt>Items</dt>
        <dd>
          {formatCount(counts.completed)} completed, {formatCount(counts.failed)} failed, {formatCount(counts.cancelled)} cancelled of{' '}
          {formatCount(counts.total)}
        </dd>
        {Object.entries(summary.scores).map(([scorer, score]) => (
          <>
            <dt>{scorer}</dt>
            <dd>
              {score.mean.toFixed(3)} <span class="muted">mean of {formatCount(score.count)}</span>
            </dd>
          </>
        ))}
        <dt>Cost</dt>
        <dd>{formatUsd(summary.cost_usd)}</dd>
        <dt>Latency</dt>
        <dd>
          mean {formatDuration(summary.latency_ms.mean)}, p50 {formatDuration(summary.latency_ms.p50)}, p95{' '}
          {formatDuration(summary.latency_ms.p95)}
        </dd>
        <dt>Created</dt>
        <dd>{formatTime(experiment.created_at)}</dd>
        {experiment.error && (
          <>
            <dt>Error</dt>
            <dd class="error">
              {experiment.error.code}: {experiment.error.message}
            </dd>
          </>
        )}
      </dl>
      <CompareForm experimentId={experiment.id} />
      <section aria-labelledby="items-title">
        <h2 id="items-title">Items</h2>
        <Async loaded={items} what="the items">
          {(page) => (
            <>
              <table class="listing">
                <thead>
                  <tr>
                    <th scope="col">Dataset item</th>
                    <th scope="col">Status</th>
                    <th scope="col">Scores</th>
                    <th scope="col">Output</th>
                    <th scope="col">Cost</th>
                    <th scope="col">Latency</th>
                    <th scope="col">Run</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((item) => (
                    <tr key={item.id}>
                      <th scope="row">
                        <code class="id">{item.dataset_item_id}</code>
                      </th>
                      <td>{item.error ? <span title={item.error.message}>{`${item.status} (${item.error.code})`}</span> : item.status}</td>
                      <td>{item.scores.map((score) => `${score.scorer} ${score.value.toFixed(2)}`).join(', ') || '—'}</td>
                      <td class="content">{item.output ?? '—'}</td>
                      <td>{formatUsd(item.cost_usd)}</td>
                      <td>{formatDuration(item.latency_ms)}</td>
                      <td>
                        <IdLink id={item.run_id} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} what="items" />
            </>
          )}
        </Async>
      </section>
    </>
  );
}

/** Compares this experiment with a baseline on the same dataset, named by its id. */
function CompareForm({ experimentId }: { experimentId: string }) {
  const [, navigate] = useLocation();
  const [baseline, setBaseline] = useState('');
  const submit = (event: Event) => {
    event.preventDefault();
    if (baseline.trim())
      navigate(`/experiments/${encodeURIComponent(experimentId)}/comparison?baseline=${encodeURIComponent(baseline.trim())}`);
  };
  return (
    <form class="filters" onSubmit={submit}>
      <div class="field">
        <label for="baseline">Compare with the experiment</label>
        <input
          id="baseline"
          value={baseline}
          placeholder="exp_…"
          maxLength={64}
          onInput={(event) => setBaseline(event.currentTarget.value)}
        />
      </div>
      <button type="submit">Compare</button>
    </form>
  );
}
