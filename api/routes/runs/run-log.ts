/**
 * Following a run from the API: its event log as Server-Sent Events (from any point, live until the run
 * ends), and waiting for its end with a bound.
 */
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { ApiContext, ApiDeps } from '../../context.js';
import { findRun, isFinished, runById, type RunRecord } from '../../../records/runs.js';
import { runEventsAfter } from '../../../records/run-events.js';
import { endsRun, presentRunEvent, TERMINAL_RUN_EVENTS } from '../../../presenters/run.js';

// A comment line this often keeps proxies from closing a quiet stream.
const KEEPALIVE_MS = 15_000;

const ENDING_OR_ASKING = new Set([...TERMINAL_RUN_EVENTS, 'approval.requested']);

/**
 * The run once it has ended (or, `orAsking`, once a tool call of it waits for approval), or as it stands after
 * `ms` (sooner when `signal` aborts or this process stops).
 */
export async function runWhenEnded(
  deps: ApiDeps,
  projectId: string,
  runId: string,
  ms: number,
  signal?: AbortSignal,
  { orAsking = false } = {},
): Promise<RunRecord> {
  const deadline = Date.now() + ms;
  const ended = signal ? AbortSignal.any([signal, deps.runEvents.closing]) : deps.runEvents.closing;
  // Only the run's end (or request) is of interest here: the events before it need no look at the run.
  const follower = deps.runEvents.follow(runId, orAsking ? ENDING_OR_ASKING : TERMINAL_RUN_EVENTS);
  try {
    for (;;) {
      const run = await findRun(deps.db, projectId, runId);
      if (!run) throw new Error(`run ${runId} vanished`);
      if (isFinished(run.status) || (orAsking && run.pending_approvals > 0) || Date.now() >= deadline || ended.aborted) return run;
      await follower.next(deadline - Date.now(), ended);
    }
  } finally {
    follower.close();
  }
}

/**
 * Until the client has taken in what was written (true), or `ms` pass with nothing taken (false: the client
 * stalls), or `signal` aborts (true: the caller sees it aborted).
 */
export async function drained(stream: PassThrough, ms: number, signal: AbortSignal): Promise<boolean> {
  const stalled = AbortSignal.timeout(ms);
  try {
    await once(stream, 'drain', { signal: AbortSignal.any([stalled, signal]) });
    return true;
  } catch {
    return !stalled.aborted || signal.aborted;
  }
}

/**
 * Answers with the run's events after `afterSeq`, as they are appended, until its terminal event. `release`
 * gives back the stream's slot (EventStreamSlots) when it ends. A client that reads slower than the log
 * grows holds the server to one event at a time; one that takes in nothing for the stall bound is
 * disconnected, and resumes with Last-Event-ID when it is ready.
 */
export function streamRunEvents(ctx: ApiContext, deps: ApiDeps, runId: string, afterSeq: number, release: () => void): void {
  const stream = new PassThrough();
  const closed = new AbortController();
  ctx.req.on('close', () => closed.abort());
  ctx.status = 200;
  ctx.set('Content-Type', 'text/event-stream; charset=utf-8');
  ctx.set('Cache-Control', 'no-cache');
  ctx.set('X-Accel-Buffering', 'no');
  ctx.body = stream;

  // The client going away, or this process stopping (the client then resumes elsewhere with Last-Event-ID).
  const ended = AbortSignal.any([closed.signal, deps.runEvents.closing]);
  const stallMs = deps.streamSlots.limits.stallSeconds * 1000;
  // Taken before the first read, so that an event logged between a read and the wait after it still wakes it.
  const follower = deps.runEvents.follow(runId);
  let stalled = false;
  const send = async (text: string): Promise<boolean> => {
    if (stream.write(text) || (await drained(stream, stallMs, ended))) return true;
    stalled = true;
    return false;
  };
  const follow = async () => {
    let seq = afterSeq;
    let lastWrite = Date.now();
    let look = true;
    while (!ended.aborted) {
      if (look) {
        const events = await runEventsAfter(deps.db, runId, seq);
        for (const event of events) {
          if (!(await send(presentRunEvent(event))) || ended.aborted) return;
          seq = event.seq;
          lastWrite = Date.now();
          if (endsRun(event)) return;
        }
        if (events.length > 0) continue;
        // Nothing after `seq`: a finished run has nothing more to come when the stream starts past its end
        // (a Last-Event-ID at or beyond its last event). Its status and terminal event commit together, so
        // once it reads finished, one more read sees everything it will ever log.
        const run = await runById(deps.db, runId);
        if (!run || isFinished(run.status)) {
          if ((await runEventsAfter(deps.db, runId, seq)).length === 0) return;
          continue;
        }
      }
      if (Date.now() - lastWrite >= KEEPALIVE_MS) {
        if (!(await send(': keep-alive\n\n'))) return;
        lastWrite = Date.now();
      }
      // While notifications arrive, a quiet run (one still queued, however long) costs no reads at all.
      look = await follower.next(KEEPALIVE_MS - (Date.now() - lastWrite), ended);
    }
  };
  follow()
    .catch((err) => {
      // The stream has begun, so no error body can follow; the client reconnects with Last-Event-ID.
      ctx.state.log.warn({ err, run_id: runId }, 'run event stream ended early');
    })
    .finally(() => {
      follower.close();
      release();
      if (stalled) {
        ctx.state.log.info({ run_id: runId }, 'run event stream closed: the client took nothing in for too long');
        ctx.res.destroy();
      } else {
        stream.end();
      }
    });
}
