/** What `agentplane eval` prints: the experiment's summary, the comparison table with a baseline, and the gates. */
import type { components } from '../api/generated/openapi.js';
import type { GateResult } from './eval-gates.js';

export type Experiment = components['schemas']['Experiment'];
export type Comparison = components['schemas']['ExperimentComparison'];
type Metric = Comparison['metrics'][number];

export function summaryLines(experiment: Experiment, seconds: number): string[] {
  const { item_counts: counts, summary } = experiment;
  const target = experiment.agent_id ? `agent ${experiment.agent_id}` : `network ${experiment.network_id}`;
  const lines = [
    `Experiment ${experiment.id} (dataset ${experiment.dataset_id}, ${target} v${experiment.version}, tools ${experiment.tools}): ` +
      `${experiment.status} in ${seconds.toFixed(1)} s`,
    `  items      ${counts.completed} completed, ${counts.failed} failed, ${counts.cancelled} cancelled of ${counts.total}`,
  ];
  for (const [scorer, { mean, count }] of Object.entries(summary.scores))
    lines.push(`  ${scorer.padEnd(10)} mean ${formatValue('score', mean)} (${count} items)`);
  lines.push(`  cost       $${summary.cost_usd} in all`);
  const { mean, p50, p95 } = summary.latency_ms;
  lines.push(
    `  latency    mean ${formatValue('latency_ms', mean)} ms, p50 ${formatValue('latency_ms', p50)} ms, p95 ${formatValue('latency_ms', p95)} ms`,
  );
  if (experiment.error) lines.push(`  error      ${experiment.error.code}: ${experiment.error.message}`);
  return lines;
}

/** The table: metric, baseline, candidate, difference [95% CI], and how many pairs the difference is over. */
export function comparisonLines(comparison: Comparison): string[] {
  const rows = [
    ['metric', 'baseline', 'candidate', `difference [${Math.round(comparison.confidence * 100)}% CI]`, 'pairs'],
    ...comparison.metrics.map((metric) => [
      metric.metric,
      formatValue(metric.kind, metric.baseline.mean),
      formatValue(metric.kind, metric.experiment.mean),
      differenceOf(metric),
      String(metric.difference.pairs),
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return [
    `Compared with ${comparison.baseline_id} (${comparison.items.paired} items both completed):`,
    ...rows.map((row) => `  ${row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ')}`.trimEnd()),
  ];
}

export function gateLines(results: GateResult[]): string[] {
  if (results.length === 0) return [];
  return [
    'Gates (a gate fails when its condition holds):',
    ...results.map(
      (result) =>
        `  ${result.failed ? 'FAIL' : 'pass'}  ${result.gate}  (${result.value === null ? 'no value' : String(round(result.value))})`,
    ),
  ];
}

function differenceOf(metric: Metric): string {
  const { mean, ci_low: low, ci_high: high } = metric.difference;
  if (mean === null) return 'n/a';
  const signed = (value: number) => `${value > 0 ? '+' : ''}${formatValue(metric.kind, value)}`;
  return `${signed(mean)} [${signed(low!)}, ${signed(high!)}]`;
}

/** Scores to three places, cost to six (USD), latency to whole milliseconds. */
function formatValue(kind: Metric['kind'], value: number | null): string {
  if (value === null) return 'n/a';
  if (kind === 'cost_usd') return value.toFixed(6);
  if (kind === 'latency_ms') return value.toFixed(0);
  return value.toFixed(3);
}

const round = (value: number) => Math.round(value * 1_000_000) / 1_000_000;
