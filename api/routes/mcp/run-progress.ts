/** A run's event log as MCP progress notifications: one for each step, tool call and change of state, and a heartbeat. */
import type { ApiDeps } from '../../context.js';
import { runEventsAfter, type RunEventRecord } from '../../../records/run-events.js';
import { endsRun } from '../../../presenters/run.js';

/**
 * A run quiet for this long (queued, or a long answer being written) is reported still going: clients time a
 * request out (the SDK after 60 s unless progress resets it), and a call must outlast its run.
 */
const HEARTBEAT_MS = 20_000;

type ToolCallData = { name?: unknown };
const toolNameIn = (data: Record<string, unknown>) => String((data.tool_call as ToolCallData | undefined)?.name ?? 'a tool');

/** What one event says to a person watching the call; null for events too fine to report (text deltas). */
export function progressMessageOf(event: RunEventRecord): string | null {
  const step = typeof event.data.step === 'number' ? event.data.step + 1 : null;
  const hop = event.data.child_run_id === undefined ? '' : 'Hop: ';
  const said = (() => {
    switch (event.type) {
      case 'run.in_progress':
        return 'The run started.';
      case 'run.model_fallback':
        return 'The model failed; falling back to the next one.';
      case 'step.started':
        return event.data.step_type === 'tool_call'
          ? `Step ${step}: calling ${toolNameIn(event.data)}.`
          : `Step ${step}: calling the model.`;
      case 'tool_call':
        return `The model asks for ${toolNameIn(event.data)}.`;
      case 'step.completed':
        return `Step ${step} done.`;
      case 'step.failed':
        return `Step ${step} failed.`;
      case 'approval.requested':
        return 'A tool call waits for approval.';
      case 'approval.resolved':
        return 'The approval was decided.';
      case 'run.completed':
        return 'The run completed.';
      case 'run.failed':
        return 'The run failed.';
      case 'run.cancelled':
        return 'The run was cancelled.';
      default:
        return null;
    }
  })();
  return said === null ? null : `${hop}${said}`;
}

/**
 * Sends `notify(progress, message)` for each reportable event of the run's log, from its start, until the run's
 * own last event or until `signal` aborts. `progress` counts the notifications, so it only grows.
 */
export async function reportRunProgress(
  deps: ApiDeps,
  runId: string,
  signal: AbortSignal,
  notify: (progress: number, message: string) => Promise<void>,
): Promise<void> {
  const follower = deps.runEvents.follow(runId);
  let seq = 0;
  let progress = 0;
  let sentAt = Date.now();
  const send = async (message: string) => {
    if (signal.aborted) return;
    await notify(++progress, message);
    sentAt = Date.now();
  };
  try {
    while (!signal.aborted) {
      const events = await runEventsAfter(deps.db, runId, seq);
      for (const event of events) {
        seq = event.seq;
        const message = progressMessageOf(event);
        if (message !== null) await send(message);
        if (endsRun(event)) return;
      }
      if (Date.now() - sentAt >= HEARTBEAT_MS) await send('The run is still going.');
      if (events.length === 0) await follower.next(HEARTBEAT_MS - (Date.now() - sentAt), AbortSignal.any([signal, deps.runEvents.closing]));
      if (deps.runEvents.closing.aborted) return;
    }
  } finally {
    follower.close();
  }
}
