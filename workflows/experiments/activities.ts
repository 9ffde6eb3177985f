/**
 * An experiment's I/O: its start, each item's run (made once, under the limits and budgets of the key that made the
 * experiment), each item's scores once its run has ended, and the experiment's end. Every activity is safe to run
 * again: an item's run is made in the transaction that attaches it to the item, so a retry finds it.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db, Queryable } from '../../records/db.js';
import { transaction } from '../../records/db.js';
import { endRunNeverStarted } from '../../records/unstarted-runs.js';
import { findAgentVersion } from '../../records/agents.js';
import { findNetworkVersion } from '../../records/networks.js';
import { lockActiveRuns } from '../../records/rate-limits.js';
import { exhaustedBudget } from '../../records/budgets.js';
import {
  activeRunsOf,
  childrenOf,
  insertRun,
  isFinished,
  recordRunWorkflowStarted,
  runById,
  type RunError,
  type RunRecord,
} from '../../records/runs.js';
import {
  attachRun,
  endExperiment,
  endItem,
  experimentById,
  itemById,
  itemsToRun,
  markExperimentRunning,
  type ExperimentRecord,
  type ItemToRun,
} from '../../records/experiments.js';
import { finishedRunOf } from '../../records/run-scores.js';
import { citationsOfSteps } from '../../records/run-steps.js';
import { recordUsage, type UsageEntry } from '../../records/usage.js';
import { TASK_QUEUE } from '../names.js';
import { runWorkflowId } from '../runs/ids.js';
import { networkRunWorkflowId } from '../networks/ids.js';
import { REPLAY_MISS } from '../runs/replay.js';
import { storedScorers } from './scorer-specs.js';
import { scoreCase, type Score, type ScoredCase } from './scorers.js';
import { judgeCase, type JudgeModels } from './judge.js';

export interface ExperimentActivityDependencies {
  db: Db;
  /** The models a `judge` scorer calls, and the deployment's judge model (AGENTPLANE_JUDGE_MODEL). */
  models: JudgeModels;
  /** AGENTPLANE_RATE_LIMIT_PROJECT_CONCURRENT_RUNS: an item's run waits while its project has this many going. */
  projectConcurrentRuns?: number;
}

/** The code of an item's error when its judge gave no score: the item keeps its other scores. */
export const JUDGE_FAILED = 'judge_failed';

/** An item's run, as the workflow starts it: its workflow, of which type, on which task queue. */
export type ItemRun =
  { runId: string; workflowId: string; workflowType: 'agentRunWorkflow' | 'networkRunWorkflow'; taskQueue: string } | { ended: true };

/** Why an item's run is not made yet: the key has no room, or the agent takes one run at a time. Retried. */
export const ITEM_RUN_WAITS = 'item_run_waits';

/** The run target of an experiment at its version, as a run needs it. */
async function targetOf(db: Queryable, experiment: ExperimentRecord) {
  if (experiment.agent_id) {
    const agent = await findAgentVersion(db, experiment.agent_id, experiment.version);
    if (!agent) return null;
    return {
      target: { agentId: experiment.agent_id, agentVersion: experiment.version },
      concurrency: agent.concurrency,
      model: experiment.overrides?.model ?? agent.model,
      maxSteps: agent.max_steps,
      maxCostUsd: agent.max_cost_usd,
      agentIds: [experiment.agent_id],
      taskQueue: TASK_QUEUE,
    };
  }
  const network = await findNetworkVersion(db, experiment.network_id!, experiment.version);
  if (!network) return null;
  return {
    target: { networkId: experiment.network_id!, networkVersion: experiment.version },
    concurrency: network.concurrency,
    model: network.router.model ?? 'none',
    maxSteps: network.max_hops,
    maxCostUsd: network.max_cost_usd,
    agentIds: network.members,
    taskQueue: network.worker_pool ?? TASK_QUEUE,
  };
}

const itemRunOf = (experiment: ExperimentRecord, runId: string, taskQueue: string): ItemRun =>
  experiment.agent_id
    ? { runId, workflowId: runWorkflowId(runId), workflowType: 'agentRunWorkflow', taskQueue }
    : { runId, workflowId: networkRunWorkflowId(runId), workflowType: 'networkRunWorkflow', taskQueue };

/**
 * The error an item fails with: its run's; for a network run failed by a hop's replay miss, the hop's (which
 * names the call).
 */
async function itemErrorOf(db: Queryable, run: RunRecord): Promise<RunError | null> {
  if (run.status === 'completed') return null;
  if (run.network_id) {
    const missed = (await childrenOf(db, run.id)).find((hop) => hop.error?.code === REPLAY_MISS);
    if (missed) return missed.error;
  }
  return run.error ?? { code: `run_${run.status}`, message: `The item's run ended ${run.status}.` };
}

/** The passages the run cited (a network run's: its hops'), as faithfulness reads them. */
async function citationsOfRun(db: Queryable, run: RunRecord): Promise<string[]> {
  const runIds = [run.id, ...(run.network_id ? (await childrenOf(db, run.id)).map((hop) => hop.id) : [])];
  const quotes: string[] = [];
  for (const runId of runIds) for (const step of await citationsOfSteps(db, runId)) quotes.push(...step.map((citation) => citation.quote));
  return quotes;
}

export const createExperimentActivities = ({ db, models, projectConcurrentRuns }: ExperimentActivityDependencies) => {
  /**
   * The item's scores by each of the experiment's scorers, in order (a scorer with nothing to judge gives none),
   * the judge's usage to record with them, and why the judge gave no score, if it did not.
   */
  const scoresOfItem = async (item: ItemToRun, experiment: ExperimentRecord, run: RunRecord) => {
    const finished = await finishedRunOf(db, run.id);
    const scored: ScoredCase = { expected: item.expected, outputText: run.output_text, citations: await citationsOfRun(db, run) };
    const scores: Score[] = [];
    const usage: UsageEntry[] = [];
    let judgeProblem: string | null = null;
    for (const spec of storedScorers(experiment.scorers)) {
      if (spec.name !== 'judge') {
        const score = finished ? scoreCase(spec, scored, finished) : null;
        if (score) scores.push(score);
        continue;
      }
      const judged = await judgeCase(
        db,
        models,
        spec,
        scored,
        {
          runId: run.id,
          projectId: experiment.project_id,
          apiKeyId: experiment.api_key_id,
          agentIds: run.agent_id ? [run.agent_id] : [],
          input: finished?.input ?? [],
        },
        Context.current().cancellationSignal,
      );
      if (judged.usage) usage.push(judged.usage);
      if (judged.score) scores.push(judged.score);
      else judgeProblem = judged.problem;
    }
    return { scores: scores.map(({ scorer, value, explanation }) => ({ scorer, value, explanation })), usage, judgeProblem };
  };

  /**
   * Ends the item from its run, scored, once the run has ended; false while it has not. The judge's usage is
   * recorded with the item's end; a judge that gave no score is the item's error when its run had none.
   */
  const settle = async (item: ItemToRun, experiment: ExperimentRecord): Promise<boolean> => {
    const run = item.run_id ? await runById(db, item.run_id) : null;
    if (!run || !isFinished(run.status)) return false;
    const status = run.status as 'completed' | 'failed' | 'cancelled';
    const { scores, usage, judgeProblem } = await scoresOfItem(item, experiment, run);
    const start = run.started_at ?? run.created_at;
    const runError = await itemErrorOf(db, run);
    const error =
      runError ??
      (judgeProblem === null
        ? null
        : { code: JUDGE_FAILED, message: `The judge did not score the item (${judgeProblem}); its other scores stand.` });
    await transaction(db, async (tx) => {
      for (const entry of usage) await recordUsage(tx, entry);
      await endItem(tx, item.id, {
        status,
        output: run.output_text,
        scores,
        costUsd: run.cost,
        latencyMs: run.completed_at ? Math.max(0, run.completed_at.getTime() - start.getTime()) : null,
        error,
      });
    });
    return true;
  };

  const load = async (itemId: string) => {
    const item = await itemById(db, itemId);
    const experiment = item ? await experimentById(db, item.experiment_id) : null;
    if (!item || !experiment) throw ApplicationFailure.nonRetryable(`experiment item ${itemId} does not exist`, 'item_missing');
    return { item, experiment };
  };

  return {
    /** Queued → running; answers the items still to run, in order, and how many run at once. Null once it has ended. */
    async beginExperiment({ experimentId }: { experimentId: string }): Promise<{ itemIds: string[]; concurrency: number } | null> {
      const experiment = await experimentById(db, experimentId);
      if (!experiment || isEnded(experiment)) return null;
      await markExperimentRunning(db, experimentId);
      return { itemIds: await itemsToRun(db, experimentId), concurrency: experiment.concurrency };
    },

    /**
     * Makes the item's run, once, as the API makes a run: the key's limit on runs at once (no room: retried
     * later), the agent's concurrency (`reject` with a run going: retried later; `interrupt` interrupts nothing),
     * budgets (one spent fails the item). A run made already is answered again; an item (or experiment) ended
     * meanwhile answers `ended`.
     */
    async startItemRun({ itemId }: { itemId: string }): Promise<ItemRun> {
      return transaction(db, async (tx) => {
        const item = await itemById(tx, itemId, { lock: true });
        const experiment = item ? await experimentById(tx, item.experiment_id) : null;
        if (!item || !experiment) return { ended: true };
        const target = await targetOf(tx, experiment);
        if (item.run_id) return target ? itemRunOf(experiment, item.run_id, target.taskQueue) : { ended: true };
        if (item.status !== 'queued' || isEnded(experiment)) return { ended: true };
        if (item.payloads_cleared_at) {
          await endItem(tx, item.id, {
            status: 'failed',
            error: {
              code: 'conversation_cleared',
              message: 'The item was not run: the conversation it copies was cleared (its thread deleted, or its subject forgotten).',
            },
          });
          return { ended: true };
        }
        if (!target) {
          await endItem(tx, item.id, {
            status: 'failed',
            error: {
              code: 'version_missing',
              message: `Version ${experiment.version} of ${experiment.agent_id ?? experiment.network_id} no longer exists.`,
            },
          });
          return { ended: true };
        }
        if (experiment.key_concurrent_runs !== null) {
          const active = await lockActiveRuns(tx, 'api_key', experiment.api_key_id);
          if (active >= experiment.key_concurrent_runs)
            throw ApplicationFailure.retryable(`The key has ${active} runs queued or in progress, its limit.`, ITEM_RUN_WAITS);
        }
        if (projectConcurrentRuns !== undefined) {
          const active = await lockActiveRuns(tx, 'project', experiment.project_id);
          if (active >= projectConcurrentRuns)
            throw ApplicationFailure.retryable(`The project has ${active} runs queued or in progress, its limit.`, ITEM_RUN_WAITS);
        }
        if (target.concurrency === 'reject' && (await activeRunsOf(tx, experiment.agent_id ?? experiment.network_id!, 1)).length > 0)
          throw ApplicationFailure.retryable('The agent takes one run at a time and has one going.', ITEM_RUN_WAITS);
        const budget = await exhaustedBudget(tx, {
          projectId: experiment.project_id,
          apiKeyId: experiment.api_key_id,
          agentIds: target.agentIds,
        });
        if (budget) {
          await endItem(tx, item.id, {
            status: 'failed',
            error: {
              code: 'budget_exceeded',
              message: `The item was not run: the ${budget.period === 'day' ? 'daily' : 'monthly'} budget ${budget.id} on this ${budget.scope_type.replace('_', ' ')} is spent (${budget.spent_usd} USD of ${budget.limit_usd} USD).`,
            },
          });
          return { ended: true };
        }
        const runId = await insertRun(tx, {
          projectId: experiment.project_id,
          target: target.target,
          apiKeyId: experiment.api_key_id,
          model: target.model,
          input: item.input,
          fileIds: item.file_ids,
          previousRunId: null,
          threadId: null,
          subjectId: null,
          maxSteps: target.maxSteps,
          maxCostUsd: target.maxCostUsd,
          metadata: experiment.metadata,
          experiment: {
            id: experiment.id,
            overrides: experiment.overrides,
            replayItemId: experiment.tools === 'replay' ? item.id : null,
          },
        });
        // The experiment's workflow starts the run's as its child: maintenance need not start it.
        await recordRunWorkflowStarted(tx, runId);
        await attachRun(tx, item.id, runId);
        return itemRunOf(experiment, runId, target.taskQueue);
      });
    },

    /** Scores and ends the item once its run has ended; answers whether it has (`force`: it is failed if not). */
    async settleItem({ itemId, force }: { itemId: string; force?: boolean }): Promise<boolean> {
      const { item, experiment } = await load(itemId);
      if (item.status !== 'queued' && item.status !== 'running') return true;
      if (await settle(item, experiment)) return true;
      if (!force) return false;
      await endItem(db, item.id, { status: 'failed', error: { code: 'internal_error', message: "The item's run did not end." } });
      return true;
    },

    /** Ends a run whose workflow the experiment never started, cancelled before it could. */
    async endRunNeverStarted({ runId }: { runId: string }): Promise<void> {
      await endRunNeverStarted(db, runId);
    },

    /**
     * Ends the experiment (once): items never started are cancelled, items whose runs have ended are scored, and
     * (when it is cancelled) items whose runs are still going are cancelled.
     */
    async endExperiment({
      experimentId,
      status,
      error,
    }: {
      experimentId: string;
      status: 'completed' | 'failed' | 'cancelled';
      error?: RunError;
    }): Promise<void> {
      const experiment = await experimentById(db, experimentId);
      if (!experiment) return;
      for (const itemId of await itemsToRun(db, experimentId)) {
        const item = await itemById(db, itemId);
        if (!item || (await settle(item, experiment))) continue;
        if (item.run_id) await endItem(db, item.id, { status: status === 'completed' ? 'failed' : status, error: error ?? null });
      }
      await endExperiment(db, experimentId, status, error ?? null);
    },
  };
};

const isEnded = (experiment: ExperimentRecord) => experiment.status !== 'queued' && experiment.status !== 'running';

export type ExperimentActivities = ReturnType<typeof createExperimentActivities>;
