/** POST /v1/runs/{id}/feedback: a person's score of a finished run, stored as the `human` (or `human:<name>`) score. */
import type { ApiContext, ApiDeps } from '../../context.js';
import { callerOf } from '../../context.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import type { Input } from '../../validation.js';
import { createOnce } from '../../idempotency.js';
import { respond } from '../../audit.js';
import { findRun, isFinished } from '../../../records/runs.js';
import { saveScores } from '../../../records/run-scores.js';
import { presentRunOf } from './run-object.js';

export async function addRunFeedback(ctx: ApiContext, deps: ApiDeps, { path: { id }, body }: Input<'addRunFeedback'>): Promise<void> {
  const { projectId } = callerOf(ctx);
  const run = await findRun(deps.db, projectId, id);
  if (!run) throw NotFoundError('run', id);
  if (!isFinished(run.status)) throw ConflictError('run_not_finished', `Run ${id} is ${run.status}; feedback is taken once it has ended.`);
  const value = typeof body.score === 'number' ? body.score : body.score === 'thumbs_up' ? 1 : 0;
  const scorer = body.name ? `human:${body.name}` : 'human';
  const comment = body.comment?.trim();
  const explanation =
    comment ||
    (typeof body.score === 'string'
      ? `A person gave it a thumbs ${body.score === 'thumbs_up' ? 'up' : 'down'}.`
      : `A person scored it ${value}.`);
  // The run is part of what the key identifies: the same feedback on another run is another request.
  const { created } = await createOnce(ctx, deps, { ...body, run_id: id }, async (tx) => {
    await saveScores(tx, id, [{ scorer, value, explanation }]);
    return { status: 200, body: await presentRunOf(deps, run, tx) };
  });
  const now = await findRun(deps.db, projectId, id);
  respond(ctx, { status: created.status, body: await presentRunOf(deps, now!) });
}
