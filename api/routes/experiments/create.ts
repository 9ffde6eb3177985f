/**
 * POST /v1/experiments. The experiment and its items (a copy of each dataset item, with the tools its source run
 * was offered) are committed with the audit entry, then its workflow is started; the workflow makes each item's
 * run under the limits and budgets of the key that made the experiment.
 */
import type { ApiContext, ApiDeps } from '../../context.js';
import { callerOf } from '../../context.js';
import { ApiError, ConflictError, InvalidRequestError, NotFoundError, PermissionError, RateLimitError } from '../../errors.js';
import { hasScope } from '../../middleware/auth.js';
import { concurrentRunsOf } from '../../middleware/rate-limit.js';
import type { Input } from '../../validation.js';
import { createOnce } from '../../idempotency.js';
import { respond } from '../../audit.js';
import { checkModel } from '../agents/definition.js';
import { findAgent, findAgentVersion } from '../../../records/agents.js';
import { findNetwork, findNetworkVersion } from '../../../records/networks.js';
import { allItemsOf, findDataset, holdDataset, holdSourceRuns } from '../../../records/datasets.js';
import {
  DEFAULT_EXPERIMENTS_PER_PROJECT,
  createExperiment,
  lockUnfinishedExperimentsOfProject,
  tallyOf,
  toolSpecsOfRuns,
  type AgentOverrides,
} from '../../../records/experiments.js';
import type { Queryable } from '../../../records/db.js';
import { defaultScorers, startExperimentWorkflow, type ScorerSpec } from '../../../workflows/experiments/client.js';
import { checkedScorers } from '../datasets/datasets.js';
import { presentExperiment } from '../../../presenters/experiment.js';

/** The most items one experiment runs: its workflow's history holds a few events per item. */
export const MAX_EXPERIMENT_ITEMS = 1_000;
const DEFAULT_CONCURRENCY = 4;
/** When to ask again for a place: asking costs a request, not Temporal's work, and an experiment may end any time. */
const EXPERIMENT_RETRY_AFTER_SECONDS = 5;

type Body = Input<'createExperiment'>['body'];

/** The agent or network the experiment runs, and the version (the current one unless named). */
async function targetOf(db: Queryable, projectId: string, body: Body) {
  if ((body.agent_id === undefined) === (body.network_id === undefined))
    throw InvalidRequestError('invalid_parameter', 'Give `agent_id` or `network_id`, one of them.', 'agent_id');
  if (body.network_id !== undefined && body.overrides !== undefined)
    throw InvalidRequestError(
      'unsupported_parameter',
      '`overrides` change an agent; a network experiment runs its members as they are.',
      'overrides',
    );
  const exists = async (version: number) =>
    body.agent_id !== undefined
      ? (await findAgentVersion(db, body.agent_id, version)) !== null
      : (await findNetworkVersion(db, body.network_id!, version)) !== null;
  const current =
    body.agent_id !== undefined
      ? ((await findAgent(db, projectId, body.agent_id)) ?? notFound('agent', body.agent_id, 'agent_id'))
      : ((await findNetwork(db, projectId, body.network_id!)) ?? notFound('network', body.network_id!, 'network_id'));
  const version = body.version ?? current.version;
  if (!(await exists(version))) {
    const kind = body.agent_id !== undefined ? 'Agent' : 'Network';
    throw new ApiError(
      404,
      'not_found_error',
      'resource_not_found',
      `${kind} ${current.id} has no version ${version}; its latest is ${current.version}.`,
      'version',
    );
  }
  return { target: body.agent_id !== undefined ? { agentId: body.agent_id } : { networkId: body.network_id! }, version };
}

const notFound = (what: string, id: string, param: string): never => {
  throw NotFoundError(what, id, param);
};

export async function createExperimentRoute(ctx: ApiContext, deps: ApiDeps, { body }: Input<'createExperiment'>): Promise<void> {
  const caller = callerOf(ctx);
  const { projectId } = caller;
  // An experiment runs the agent (or network) once per item.
  if (!hasScope(caller, 'agents:run')) throw PermissionError('agents:run');
  const { target, version } = await targetOf(deps.db, projectId, body);
  if (body.overrides?.model !== undefined) await checkModel(deps.models, body.overrides.model, 'overrides.model');

  const dataset = (await findDataset(deps.db, projectId, body.dataset_id)) ?? notFound('dataset', body.dataset_id, 'dataset_id');
  const items = await allItemsOf(deps.db, dataset.id);
  if (items.length === 0) throw ConflictError('dataset_empty', `The dataset ${dataset.id} has no items to run.`, 'dataset_id');
  if (items.length > MAX_EXPERIMENT_ITEMS)
    throw ConflictError(
      'dataset_too_large',
      `An experiment runs at most ${MAX_EXPERIMENT_ITEMS} items; the dataset ${dataset.id} has ${items.length}.`,
      'dataset_id',
    );
  // Attaching a file hands its content to the model and back in the answer, as a run's attachments do.
  if (items.some((item) => item.file_ids.length > 0) && !hasScope(caller, 'files:read')) throw PermissionError('files:read');

  // Checked as a dataset's are; a dataset's own were checked when they were written.
  const scorers =
    body.scorers !== undefined
      ? await checkedScorers(deps, body.scorers)
      : dataset.scorers.length > 0
        ? (dataset.scorers as ScorerSpec[])
        : defaultScorers(items.some((item) => item.expected !== null));

  const sourceRuns = [...new Set(items.flatMap((item) => (item.source_run_id ? [item.source_run_id] : [])))];
  const sourceSpecs = await toolSpecsOfRuns(deps.db, projectId, sourceRuns);
  const { created, replayed } = await createOnce(ctx, deps, body, async (tx) => {
    // Held while the copies are made: a thread deleted or a subject forgotten meanwhile either waits for them (and
    // clears them) or has deleted the items first, and those are not copied.
    await holdSourceRuns(tx, projectId, sourceRuns);
    // Read before it was held, the dataset may have been deleted since: its items, copied now, would be none.
    if (!(await holdDataset(tx, projectId, dataset.id))) notFound('dataset', dataset.id, 'dataset_id');
    const unfinished = await lockUnfinishedExperimentsOfProject(tx, projectId);
    if (unfinished >= (deps.experimentsPerProject ?? DEFAULT_EXPERIMENTS_PER_PROJECT))
      throw RateLimitError(
        'concurrent_experiments_exceeded',
        `This project has ${unfinished} experiments queued or running, the most it may have at once; start this one once one of them ends, or cancel one.`,
        EXPERIMENT_RETRY_AFTER_SECONDS,
      );
    const experiment = await createExperiment(
      tx,
      projectId,
      {
        name: body.name ?? '',
        datasetId: dataset.id,
        target,
        version,
        overrides: (body.overrides as AgentOverrides | undefined) ?? null,
        scorers,
        tools: body.tools ?? 'replay',
        concurrency: body.concurrency ?? DEFAULT_CONCURRENCY,
        metadata: body.metadata ?? {},
        apiKeyId: caller.apiKeyId,
        keyConcurrentRuns: concurrentRunsOf(caller, deps.rateLimits),
      },
      items,
      sourceSpecs,
    );
    const tally = (await tallyOf(tx, [experiment.id])).get(experiment.id)!;
    // Items deleted since they were read are not copied; with none left, there is nothing to run.
    if (tally.counts.total === 0) throw ConflictError('dataset_empty', `The dataset ${dataset.id} has no items to run.`, 'dataset_id');
    return { status: 201, body: presentExperiment(experiment, tally) };
  });
  if (!replayed) {
    await startExperimentWorkflow(deps.temporal, created.body.id, projectId).catch((err) =>
      ctx.state.log.warn({ err, experiment_id: created.body.id }, 'experiment start failed; it stays queued'),
    );
  }
  ctx.set('Location', `/v1/experiments/${created.body.id}`);
  respond(ctx, created);
}
