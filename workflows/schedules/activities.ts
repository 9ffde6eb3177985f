/**
 * A schedule's time: its run is made by the API's own admission (api/routes/schedules/admission.ts), which the
 * worker's process gives these activities, so the limits, budgets and concurrency policies of the run endpoints
 * apply; then the run is looked at until it ends.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Db } from '../../records/db.js';
import { isFinished, runById } from '../../records/runs.js';
import type { ScheduledFiring, ScheduledRunAdmission } from './client.js';

export interface ScheduleDependencies {
  db: Db;
  /** Absent in a worker built without the API's admission (a test's): such a worker refuses scheduled runs. */
  admitScheduledRun?: ScheduledRunAdmission;
}

export const createScheduleActivities = ({ db, admitScheduledRun }: ScheduleDependencies) => ({
  async startScheduledRun(firing: ScheduledFiring): Promise<string | null> {
    if (!admitScheduledRun)
      throw ApplicationFailure.nonRetryable('this worker was started without the admission of scheduled runs', 'no_admission');
    const { client, log } = Context.current();
    return admitScheduledRun(firing, client, (details, message) => log.warn(message, details));
  },

  async hasRunEnded(runId: string): Promise<boolean> {
    const run = await runById(db, runId);
    return run === null || isFinished(run.status);
  },
});

export type ScheduleActivities = ReturnType<typeof createScheduleActivities>;
