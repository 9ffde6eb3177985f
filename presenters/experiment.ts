import type { components } from '../api/generated/openapi.js';
import type { ExperimentItemRecord, ExperimentRecord, ExperimentSummary, ItemCounts } from '../records/experiments.js';
import { unixSeconds } from './time.js';

export type ExperimentObject = components['schemas']['Experiment'];
export type ExperimentItemObject = components['schemas']['ExperimentItem'];

/** An experiment with its items' tally: how many are in each state, and what the ended ones add up to. */
export function presentExperiment(
  experiment: ExperimentRecord,
  tally: { counts: ItemCounts; summary: ExperimentSummary },
): ExperimentObject {
  return {
    id: experiment.id,
    object: 'experiment',
    name: experiment.name,
    dataset_id: experiment.dataset_id,
    agent_id: experiment.agent_id,
    network_id: experiment.network_id,
    version: experiment.version,
    overrides: experiment.overrides as ExperimentObject['overrides'],
    scorers: experiment.scorers as ExperimentObject['scorers'],
    tools: experiment.tools,
    concurrency: experiment.concurrency,
    status: experiment.status,
    item_counts: tally.counts,
    summary: tally.summary,
    error: experiment.error,
    metadata: experiment.metadata,
    created_at: unixSeconds(experiment.created_at),
    started_at: unixSeconds(experiment.started_at),
    completed_at: unixSeconds(experiment.completed_at),
  };
}

export function presentExperimentItem(item: ExperimentItemRecord): ExperimentItemObject {
  return {
    id: item.id,
    object: 'experiment.item',
    experiment_id: item.experiment_id,
    dataset_item_id: item.dataset_item_id,
    run_id: item.run_id,
    status: item.status,
    output: item.output,
    scores: item.scores,
    cost_usd: item.cost_usd,
    latency_ms: item.latency_ms,
    error: item.error,
    ...(item.payloads_cleared_at ? { payload_expired: true as const } : {}),
  };
}
