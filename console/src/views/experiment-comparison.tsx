/**
 * Two experiments on the same dataset side by side: each metric's means and their difference with its 95% interval,
 * then, per metric, the items that changed most, each with both runs.
 */
import { Link, useSearchParams } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { IdLink } from '../components/links';
import { Async } from '../components/states';
import { formatCount } from '../format';
import { useApi } from '../use-api';
import './admin.css';

type Metric = Schemas['ExperimentMetricComparison'];

export default function ExperimentComparisonView({ params }: { params: { id: string } }) {
  const [search] = useSearchParams();
  const baseline = search.get('baseline') ?? '';
  const comparison = useApi(
    (signal) =>
      api.GET('/v1/experiments/{id}/comparison', { params: { path: { id: params.id }, query: { baseline, top: 5 } }, signal }).then(unwrap),
    [params.id, baseline],
  );
  return (
    <>
      <p>
        <Link href={`/experiments/${encodeURIComponent(params.id)}`}>← Experiment</Link>
      </p>
      <Async loaded={comparison} what="the comparison">
        {(data) => <Comparison comparison={data} />}
      </Async>
    </>
  );
}

function Comparison({ comparison }: { comparison: Schemas['ExperimentComparison'] }) {
  return (
    <>
      <h1>
        <Link href={`/experiments/${encodeURIComponent(comparison.experiment_id)}`} class="id">
          {comparison.experiment_id}
        </Link>{' '}
        against{' '}
        <Link href={`/experiments/${encodeURIComponent(comparison.baseline_id)}`} class="id">
          {comparison.baseline_id}
        </Link>
      </h1>
      <p class="muted">
        {formatCount(comparison.items.paired)} items completed by both ({formatCount(comparison.items.experiment_completed)} and{' '}
        {formatCount(comparison.items.baseline_completed)} in all). Differences are this experiment minus the baseline, with{' '}
        {Math.round(comparison.confidence * 100)}% bootstrap intervals: one that does not include 0 is unlikely to be chance.
      </p>
      <table class="listing" aria-label="Metrics">
        <thead>
          <tr>
            <th scope="col">Metric</th>
            <th scope="col">Baseline</th>
            <th scope="col">This experiment</th>
            <th scope="col">Difference [95% interval]</th>
            <th scope="col">Pairs</th>
          </tr>
        </thead>
        <tbody>
          {comparison.metrics.map((metric) => (
            <tr key={metric.metric}>
              <th scope="row">{metric.metric}</th>
              <td>{valueOf(metric.kind, metric.baseline.mean)}</td>
              <td>{valueOf(metric.kind, metric.experiment.mean)}</td>
              <td>{differenceOf(metric)}</td>
              <td>{formatCount(metric.difference.pairs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {comparison.metrics
        .filter((metric) => metric.changed.length > 0)
        .map((metric) => (
          <section key={metric.metric} aria-label={`Items that changed most in ${metric.metric}`}>
            <h2>Changed most: {metric.metric}</h2>
            <table class="listing">
              <thead>
                <tr>
                  <th scope="col">Dataset item</th>
                  <th scope="col">Baseline</th>
                  <th scope="col">This experiment</th>
                  <th scope="col">Difference</th>
                  <th scope="col">Baseline run</th>
                  <th scope="col">This run</th>
                </tr>
              </thead>
              <tbody>
                {metric.changed.map((item) => (
                  <tr key={item.dataset_item_id}>
                    <th scope="row">
                      <code class="id">{item.dataset_item_id}</code>
                    </th>
                    <td>{valueOf(metric.kind, item.baseline)}</td>
                    <td>{valueOf(metric.kind, item.experiment)}</td>
                    <td>{signed(metric.kind, item.difference)}</td>
                    <td>
                      <IdLink id={item.baseline_run_id} />
                    </td>
                    <td>
                      <IdLink id={item.experiment_run_id} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        ))}
    </>
  );
}

function differenceOf(metric: Metric): string {
  const { mean, ci_low: low, ci_high: high } = metric.difference;
  if (mean === null || low === null || high === null) return '—';
  return `${signed(metric.kind, mean)} [${signed(metric.kind, low)}, ${signed(metric.kind, high)}]`;
}

const signed = (kind: Metric['kind'], value: number) => `${value > 0 ? '+' : ''}${valueOf(kind, value)}`;

/** Scores to three places, cost in USD to six, latency in whole milliseconds. */
function valueOf(kind: Metric['kind'], value: number | null): string {
  if (value === null) return '—';
  if (kind === 'cost_usd') return `${value < 0 ? '-' : ''}$${Math.abs(value).toFixed(6)}`;
  if (kind === 'latency_ms') return `${value.toFixed(0)} ms`;
  return value.toFixed(3);
}
