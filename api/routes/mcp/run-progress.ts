/** A run's event log as MCP progress notifications: one for each step, tool call and change of state. */
import type { ApiDeps } from '../../context.js';
import { runEventsAfter, type RunEventRecord } from '../../../records/run-events.js';
import { endsRun } from '../../../presenters/run.js';

// A follower wakes at least this often to look, in case a notification was missed.
const LOOK_MS = 15_000;

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
  try {
    while (!signal.aborted) {
      const events = await runEventsAfter(deps.db, runId, seq);
      for (const event of events) {
        seq = event.seq;
        const message = progressMessageOf(event);
        if (message !== null && !signal.aborted) await notify(++progress, message);
        if (endsRun(event)) return;
      }
      if (events.length === 0) await follower.next(LOOK_MS, AbortSignal.any([signal, deps.runEvents.closing]));
      if (deps.runEvents.closing.aborted) return;
    }
  } finally {
    follower.close();
  }
}
