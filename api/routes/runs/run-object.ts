/** A run as the API answers it in full: read from its records with the first page of its steps. */
import type { ApiDeps } from '../../context.js';
import { hopsOf, type RunRecord } from '../../../records/runs.js';
import { citationsOfSteps, stepCountOf, stepPage } from '../../../records/run-steps.js';
import { scoresOf } from '../../../records/run-scores.js';
import type { Queryable } from '../../../records/db.js';
import { presentRun, type RunObject } from '../../../presenters/run.js';

/**
 * How many steps a run object carries; the rest are read from `/v1/runs/{id}/steps`. A tool's result can
 * be up to 1 MiB, so this bounds what one read of a run holds.
 */
export const STEPS_IN_RUN = 20;

/** The run as the API shows it; `db` a transaction that has changed it, if any. */
export async function presentRunOf(deps: Pick<ApiDeps, 'db'>, run: RunRecord, db: Queryable = deps.db): Promise<RunObject> {
  const steps = await stepPage(db, run.id, undefined, STEPS_IN_RUN);
  const stepCount = steps.hasMore ? await stepCountOf(db, run.id) : steps.steps.length;
  return presentRun(
    { ...run, step_count: stepCount },
    steps,
    await citationsOfSteps(db, run.id),
    run.network_id ? await hopsOf(db, run.id) : [],
    await scoresOf(db, run.id),
  );
}
