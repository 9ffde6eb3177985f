/**
 * A task's updates as A2A streams them, read from its run's event log: the task first, a status update for
 * each change of state, the answer's text as it is written (chunks appended to the output artifact), and at
 * the end the whole output artifact (in place of the chunks) and the final status with what the run cost.
 * The log is the record, so a stream begun late, or a second one, tells the same story.
 */
import type { StreamResponse } from '@a2a-js/sdk';
import type { ApiDeps } from '../context.js';
import { isFinished, runById, type RunRecord } from '../../records/runs.js';
import { runEventsAfter } from '../../records/run-events.js';
import { endsRun } from '../../presenters/run.js';
import { contextIdOf, costOf, outputArtifactOf, presentTask, statusOf, taskStateOf, textPart } from './task.js';

// How long one wait for the log lasts; the stream's writer keeps the connection alive meanwhile.
const WAIT_MS = 15_000;

// The events that can change a task's state; the rest (steps, tool calls, text) are the run's own detail.
const STATE_EVENTS = new Set(['run.in_progress', 'approval.requested', 'approval.resolved']);

function statusUpdate(run: RunRecord, final: boolean): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: { taskId: run.id, contextId: contextIdOf(run), status: statusOf(run), metadata: final ? costOf(run) : undefined },
    },
  };
}

function artifactUpdate(run: RunRecord, text: string, append: boolean, lastChunk: boolean): StreamResponse {
  const artifact = { ...outputArtifactOf(run), parts: [textPart(text)] };
  return {
    payload: {
      $case: 'artifactUpdate',
      value: { taskId: run.id, contextId: contextIdOf(run), artifact, append, lastChunk, metadata: undefined },
    },
  };
}

function finalUpdates(run: RunRecord): StreamResponse[] {
  // The whole answer replaces the chunks: a model call that asked for tools may have written text the answer leaves out.
  const artifact = run.output_text === '' ? [] : [artifactUpdate(run, run.output_text, false, true)];
  return [...artifact, statusUpdate(run, true)];
}

/**
 * Follows `run` from its beginning until it ends, `closed` aborts (the client went away: the task goes on) or
 * this process stops, then gives back the stream's slot with `release`.
 */
export async function* followTask(
  deps: ApiDeps,
  run: RunRecord,
  release: () => void,
  closed: AbortSignal,
  historyLength?: number,
): AsyncGenerator<StreamResponse, void, undefined> {
  const ended = AbortSignal.any([closed, deps.runEvents.closing]);
  // Taken before the first read, so that an event logged between a read and the wait after it still wakes it.
  const follower = deps.runEvents.follow(run.id);
  try {
    yield { payload: { $case: 'task', value: presentTask(run, historyLength) } };
    let state = taskStateOf(run);
    let seq = 0;
    let written = false;
    while (!ended.aborted) {
      const events = await runEventsAfter(deps.db, run.id, seq);
      for (const event of events) {
        seq = event.seq;
        // The run's own text (a network's hops write theirs in their own runs, not in this task's artifact).
        if (event.type === 'output_text.delta' && event.data.child_run_id === undefined && typeof event.data.delta === 'string') {
          yield artifactUpdate(run, event.data.delta, written, false);
          written = true;
          continue;
        }
        if (!endsRun(event) && !STATE_EVENTS.has(event.type)) continue;
        const now = await runById(deps.db, run.id);
        if (!now) return;
        if (endsRun(event)) {
          yield* finalUpdates(now);
          return;
        }
        // A hop's approval is its network's too: the state is read from the run, which counts them all.
        if (taskStateOf(now) !== state && !isFinished(now.status)) {
          state = taskStateOf(now);
          yield statusUpdate(now, false);
        }
      }
      if (events.length > 0) continue;
      await follower.next(WAIT_MS, ended);
    }
  } finally {
    follower.close();
    release();
  }
}
