/**
 * Quality's I/O: the judge's verdict on a run that has ended, and the batches of a backfill, which score a
 * past range of runs again. Both are safe to run again: a score is replaced, never added twice, and a judge
 * call already answered for this backfill (or this run) is not made again.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import { transaction } from '../../records/db.js';
import { hasScore, scoreFinishedRun } from '../../records/run-scores.js';
import { HEURISTIC_SCORERS, type HeuristicScorer } from '../../records/run-scorers.js';
import { advanceBackfill, backfillById, finishBackfill, nextRunsToScore, scoredSince } from '../../records/quality-backfills.js';
import type { ModelCatalogue } from '../../models/catalogue.js';
import { ModelCallError, type ModelGateway } from '../../models/gateway.js';
import { JUDGE_SCORER, judgeRun, type Judge } from './judge.js';
import { modelCallFailure } from '../model-failure.js';
import { runById } from '../../records/runs.js';
import { contextOf, inSpan, tracingOn } from '../../tracing/context.js';
import { addEvaluation, ATTR_RUN_ID } from '../../tracing/gen-ai.js';

export interface QualityActivityDependencies {
  db: Db;
  /** `judgeModel`: AGENTPLANE_JUDGE_MODEL, the model that judges finished runs, if any. */
  models: { catalogue: ModelCatalogue; gateway: ModelGateway; judgeModel?: string };
}

/** Runs a backfill scores at a time, in one transaction. */
export const BACKFILL_BATCH = 50;
/** A backfill's judge calls wait this many attempts of their batch for a provider that may answer later. */
const BACKFILL_JUDGE_ATTEMPTS = 3;

export const createQualityActivities = ({ db, models }: QualityActivityDependencies) => {
  const judge: Judge | undefined = models.judgeModel
    ? { catalogue: models.catalogue, gateway: models.gateway, id: models.judgeModel }
    : undefined;

  /** The judge's call, its failure as the activity's: retried while trying again can help. */
  const judgeOnce = async (runId: string) => {
    const context = Context.current();
    try {
      const verdict = await judgeRun(db, judge!, runId, context.cancellationSignal);
      if (!verdict.scored) context.log.warn('the judge gave no score', { run_id: runId, reason: verdict.reason });
      return verdict;
    } catch (err) {
      throw err instanceof ModelCallError ? modelCallFailure(err) : err;
    }
  };

  return {
    /** The judge's score of a run that has just ended; once per run. */
    async judgeEndedRun({ runId }: { runId: string }): Promise<void> {
      if (!judge || (await hasScore(db, runId, JUDGE_SCORER))) return;
      if (!tracingOn()) {
        await judgeOnce(runId);
        return;
      }
      // The verdict is an evaluation event in the run's trace, on a span of its own: the run's span has left already.
      const run = await runById(db, runId);
      await inSpan(
        `evaluate ${JUDGE_SCORER}`,
        { parent: contextOf(run?.trace_context), attributes: { [ATTR_RUN_ID]: runId, 'gen_ai.evaluation.name': JUDGE_SCORER } },
        async (span) => {
          const verdict = await judgeOnce(runId);
          if (span && verdict.scored) addEvaluation(span, { scorer: JUDGE_SCORER, value: verdict.value, explanation: verdict.rationale });
        },
      );
    },

    /** Scores the backfill's next batch of runs; `done` once no run is left. */
    async scoreBackfillBatch({ backfillId }: { backfillId: string }): Promise<{ done: boolean; scored: number }> {
      const context = Context.current();
      const backfill = await backfillById(db, backfillId);
      if (!backfill || backfill.status !== 'in_progress') return { done: true, scored: 0 };
      const runIds = await nextRunsToScore(db, backfillId, BACKFILL_BATCH);
      if (runIds.length === 0) return { done: true, scored: 0 };
      const heuristics = HEURISTIC_SCORERS.filter((name) => backfill.scorers.includes(name)) as HeuristicScorer[];
      if (judge && backfill.scorers.includes(JUDGE_SCORER)) {
        for (const runId of runIds) {
          context.heartbeat();
          if (await scoredSince(db, runId, JUDGE_SCORER, backfill.created_at)) continue;
          try {
            await judgeOnce(runId);
          } catch (err) {
            // A provider still down after the batch's last attempt: the run keeps the judge score it had.
            if (!(err instanceof ApplicationFailure) || (!err.nonRetryable && context.info.attempt < BACKFILL_JUDGE_ATTEMPTS)) throw err;
            context.log.warn('the judge did not answer; the run keeps its earlier judge score', { run_id: runId, error: err.message });
          }
        }
      }
      await transaction(db, async (tx) => {
        if (heuristics.length > 0) for (const runId of runIds) await scoreFinishedRun(tx, runId, heuristics);
        await advanceBackfill(tx, backfillId, runIds.at(-1)!, runIds.length);
      });
      return { done: runIds.length < BACKFILL_BATCH, scored: runIds.length };
    },

    async finishBackfill({ backfillId, error }: { backfillId: string; error?: { code: string; message: string } }): Promise<void> {
      await finishBackfill(db, backfillId, error ? 'failed' : 'completed', error ?? null);
    },
  };
};

export type QualityActivities = ReturnType<typeof createQualityActivities>;
