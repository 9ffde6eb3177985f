/**
 * Following a run from the API: its event log as Server-Sent Events (from any point, live until the run
 * ends), and waiting for its end with a bound.
 */
import { PassThrough } from 'node:stream';
import type { ApiContext, ApiDeps } from '../../context.js';
import { findRun, isFinished, runById, type RunRecord } from '../../../records/runs.js';
import { runEventsAfter } from '../../../records/run-events.js';
import { endsRun, presentRunEvent, TERMINAL_RUN_EVENTS } from '../../../presenters/run.js';

// A comment line this often keeps proxies from closing a quiet stream.
const KEEPALIVE_MS = 15_000;

/** The run once it has ended, or as it stands after `ms` (sooner when `signal` aborts or this process stops). */
export async function runWhenEnded(deps: ApiDeps, projectId: string, runId: string, ms: number, signal?: AbortSignal): Promise<RunRecord> {
  const deadline = Date.now() + ms;
  const ended = signal ? AbortSignal.any([signal, deps.runEvents.closing]) : deps.runEvents.closing;
  for (;;) {
    const run = await findRun(deps.db, projectId, runId);
    if (!run) throw new Error(`run ${runId} vanished`);
    if (isFinished(run.status) || Date.now() >= deadline || ended.aborted) return run;
    // Only the run's end is of interest here: the events before it need no look at the run.
    await deps.runEvents.wait(runId, deadline - Date.now(), ended, TERMINAL_RUN_EVENTS);
  }
}

/** Answers with the run's events after `afterSeq`, as they are appended, until its terminal event. */
export function streamRunEvents(ctx: ApiContext, deps: ApiDeps, runId: string, afterSeq: number): void {
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
  const follow = async () => {
    let seq = afterSeq;
    let lastWrite = Date.now();
    while (!ended.aborted) {
      const events = await runEventsAfter(deps.db, runId, seq);
      for (const event of events) {
        stream.write(presentRunEvent(event));
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
      if (Date.now() - lastWrite >= KEEPALIVE_MS) {
        stream.write(': keep-alive\n\n');
        lastWrite = Date.now();
      }
      await deps.runEvents.wait(runId, KEEPALIVE_MS, ended);
    }
  };
  follow()
    .catch((err) => {
      // The stream has begun, so no error body can follow; the client reconnects with Last-Event-ID.
      ctx.state.log.warn({ err, run_id: runId }, 'run event stream ended early');
    })
    .finally(() => stream.end());
}
