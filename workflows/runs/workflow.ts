/**
 * A run: admission, planning, then model calls and tool calls until the model answers without calling
 * a tool, the step budget is spent, or the run is cancelled. Deterministic orchestration only; every
 * side effect is an activity (workflows/runs/activities.ts).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  defineSignal,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { ModelReply, RunActivities, RunEnding, RunPlan } from './activities.js';
import type { RunError } from '../../records/runs.js';
import { ADMIT_SIGNAL, APPROVAL_SIGNAL, HANDOFF_TOOL, runWorkflowId } from './ids.js';
import { judgeEndedRun } from '../quality/workflow.js';
import { wakeOnThread } from './thread-turn.js';
import { learnFromEndedRun } from '../memory/workflow.js';
import { MODEL_RETRY_MAX_INTERVAL_MS } from '../../models/retry-interval.js';
import { TOOL_RETRY_MAX_INTERVAL_MS } from '../../tools/outcomes.js';
import { COST_LIMIT_REACHED, FINAL_MODEL_FAILURES, MODEL_CALL_ERROR_KINDS, MODEL_NOT_FOUND } from '../../models/failure-kinds.js';
import { failureMessage } from '../failure-message.js';
import { waitAfterRefusal } from '../refusal-backoff.js';

/** Sent by the run before it, when it ends, to an `enqueue` run waiting its turn. */
export const admitSignal = defineSignal(ADMIT_SIGNAL);

/** Sent by the API once a person decided on one of the run's approvals (its id). */
export const approvalSignal = defineSignal<[string]>(APPROVAL_SIGNAL);

/**
 * How long a tool call waiting for a decision waits before it looks on its own: the API signals each decision, and
 * this only makes up for a signal lost while Temporal was unreachable. Between looks, a waiting run costs no worker.
 */
export const APPROVAL_RECHECK_MS = 5 * 60_000;
// Past an approval's end by this much, so that the database, whose clock decides, finds it ended.
const APPROVAL_EXPIRY_MARGIN_MS = 1_000;
const QUEUED_RUN_FIRST_RECHECK_MS = 60_000;
const QUEUED_RUN_LAST_RECHECK_MS = 3_600_000;

/**
 * How long an `enqueue` run waits before looking for its turn on its own, the `looks`th time. The run ahead of it
 * wakes it when it ends, and each maintenance round (every 30 s) wakes one whose turn has come (a wake lost while
 * Temporal was unreachable); this is the last resort. The wait doubles from a minute to an hour, so that a queue of
 * thousands of runs costs Temporal next to nothing, and a run waiting days behind one that waits for approval does
 * not fill its history (about 175 events in its first day, against 8,640 at a minute).
 */
export const queuedRunRecheckMs = (looks: number): number => Math.min(QUEUED_RUN_FIRST_RECHECK_MS * 2 ** looks, QUEUED_RUN_LAST_RECHECK_MS);

/** Marks the histories in which a replayed tool call could end the run. */
const REPLAY_MISS_PATCH = 'replay-miss-ends-run';

// Bookkeeping and the start of a run as local activities: run by the worker that runs the workflow,
// within its workflow task, with no activity task to dispatch and no workflow task to wake afterwards,
// which were most of a short run's time and of Temporal's work. They are safe to run again: a worker
// that dies mid-way runs them again when the workflow task is retried. A start waiting for attachments
// still being extracted, or MCP servers to ask for their tools, is left to the startRun activity, as are
// model and tool calls: long, heartbeating (which brings a cancellation at once), retried on any worker.
const bookkeeping = proxyLocalActivities<RunActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

const localPlanning = proxyLocalActivities<RunActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 6 },
});

/** A slow start's attempts; a refusal of its project's share of the slots, waited out, is none of them. */
export const SLOW_START_ATTEMPTS = 6;
// A slow start, as an activity: heartbeating, and retried on any worker.
const remotePlanning = proxyActivities<RunActivities>({
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: SLOW_START_ATTEMPTS },
});

// A worker that dies mid-call is noticed within the heartbeat timeout, and the call runs again elsewhere.
// 429 and 5xx are retried with backoff (a provider's Retry-After first, up to the maximum interval); 4xx never.
const modelCallRetry = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: MODEL_RETRY_MAX_INTERVAL_MS } as const;
const modelCalls = (maximumAttempts: number) =>
  proxyActivities<RunActivities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '5 seconds',
    retry: { ...modelCallRetry, maximumAttempts, nonRetryableErrorTypes: [...FINAL_MODEL_FAILURES] },
  });
// A model named outright is retried longer; `auto` moves to its next candidate sooner.
const namedModel = modelCalls(6);
const routedModel = modelCalls(2);

/** A tool call's attempts; a refusal of its project's share of the slots, waited out, is none of them. */
export const TOOL_CALL_ATTEMPTS = 4;
const tools = proxyActivities<RunActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '5 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: TOOL_RETRY_MAX_INTERVAL_MS,
    maximumAttempts: TOOL_CALL_ATTEMPTS,
  },
});

/**
 * How a model step's failure ends it: a model call's failure as `model_<kind>`; a call not made for its cost cap
 * or a budget, or for a model the catalogue no longer holds, as that; anything else (the platform's own failure,
 * say a database error that was not an outage) as `internal_error`, as the run's own failures are.
 */
function failureOf(err: unknown): { error: RunError; retryable: boolean } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const kind = cause.type ?? 'Error';
    const retryable = !cause.nonRetryable && !FINAL_MODEL_FAILURES.includes(kind);
    if ((MODEL_CALL_ERROR_KINDS as readonly string[]).includes(kind))
      return { error: { code: `model_${kind}`, message: cause.message }, retryable };
    if (kind === COST_LIMIT_REACHED || kind === MODEL_NOT_FOUND) return { error: { code: kind, message: cause.message }, retryable };
    return {
      error: { code: 'internal_error', message: `The model step could not go on (${kind}): ${cause.message}` },
      retryable,
    };
  }
  return { error: { code: 'model_unavailable', message: cause instanceof Error ? cause.message : String(cause) }, retryable: true };
}

export async function agentRunWorkflow({ runId }: { runId: string }): Promise<void> {
  let admitted = false;
  setHandler(admitSignal, () => {
    admitted = true;
  });
  const decided = new Set<string>();
  setHandler(approvalSignal, (approvalId) => {
    decided.add(approvalId);
  });
  // Wakes the agent's next queued run at once; one that misses this is woken by maintenance, or looks on its own.
  const wake = async (next: string | null) => {
    if (next && next !== runId)
      await getExternalWorkflowHandle(runWorkflowId(next))
        .signal(admitSignal)
        .catch(() => undefined);
  };
  // The agent's next run is woken before the judge (if any) reads the answer.
  const settle = (ending: RunEnding) =>
    CancellationScope.nonCancellable(async () => {
      await wake(ending.next);
      await wakeOnThread(ending);
      await learnFromEndedRun(runId, ending);
      await judgeEndedRun(runId, ending);
    });
  const end = (status: 'completed' | 'failed' | 'cancelled', error?: RunError) =>
    CancellationScope.nonCancellable(async () => settle(await bookkeeping.endRun({ runId, status, error })));

  /** A slow start; one refused for the project's share of the worker's slots is not made, and asked again after a wait. */
  const prepared = async (): Promise<RunPlan> => {
    for (let refusals = 0; ; refusals++) {
      const plan = await remotePlanning.startRun({ runId, waitsForSlot: true });
      if (!('slotsTaken' in plan)) return plan;
      await sleep(waitAfterRefusal(refusals, Math.random(), plan.slotsTaken.waitFactor));
    }
  };

  /** The run's plan once it is its turn; null when the run ended before it started. */
  const begin = async (): Promise<RunPlan | null> => {
    for (let looks = 0; ; looks++) {
      const beginning = await localPlanning.beginRun({ runId });
      if (beginning.admission === 'start') return beginning.plan;
      if (beginning.admission === 'prepare') return await prepared();
      if (beginning.admission === 'gone') return null;
      admitted = false;
      await condition(() => admitted, queuedRunRecheckMs(looks));
    }
  };

  try {
    const plan = await begin();
    if (!plan) return;
    if (!plan.ok) return await end('failed', plan.error);

    const models = plan.candidates.length > 1 ? routedModel : namedModel;
    let step = 0;
    let candidate = 0;
    for (;;) {
      if (step >= plan.maxSteps) {
        return await end('failed', {
          code: 'max_steps_reached',
          message: `The run used its ${plan.maxSteps} steps without a final answer.`,
        });
      }
      const model = plan.candidates[candidate]!;
      let reply: ModelReply;
      try {
        reply = await models.callModel({ runId, stepIndex: step, model });
      } catch (err) {
        if (isCancellation(err)) throw err;
        const { error, retryable } = failureOf(err);
        await bookkeeping.abandonStep({ runId, stepIndex: step, error });
        step += 1;
        if (retryable && candidate + 1 < plan.candidates.length) {
          candidate += 1;
          const next = plan.candidates[candidate]!;
          await bookkeeping.noteFallback({
            runId,
            model: next,
            reason: `${plan.reason} Fell back from ${model} to ${next}: ${error.message}`,
          });
          continue;
        }
        return await end('failed', error);
      }
      step += 1;
      const { toolCalls, ended } = reply;
      if (toolCalls.length === 0) return ended ? await settle(ended) : await end('completed');
      // A member of a handoff network passing the task on: its hop ends here.
      const handoff = toolCalls.findIndex((call) => call.name === HANDOFF_TOOL);
      if (handoff >= 0 && (await bookkeeping.handOff({ runId, stepIndex: step + handoff, toolCall: toolCalls[handoff]! })))
        return await end('completed');
      if (step + toolCalls.length > plan.maxSteps) {
        return await end('failed', {
          code: 'max_steps_reached',
          message: `The model asked for ${toolCalls.length} tool call(s) with too few of its ${plan.maxSteps} steps left.`,
        });
      }
      const first = step;
      let missed: RunError | undefined;
      await Promise.all(
        toolCalls.map(async (toolCall, i) => {
          try {
            const call = () => tools.callTool({ runId, stepIndex: first + i, toolCall, waitsForSlot: true });
            let outcome = await call();
            for (let refusals = 0; ;) {
              if (outcome?.slotsTaken) {
                // Refused for the project's share of the worker's slots, and not made: asked again after a wait.
                await sleep(waitAfterRefusal(refusals++, Math.random(), outcome.slotsTaken.waitFactor));
              } else if (outcome?.awaitingApproval) {
                // A call waiting for a person: until the decision comes or its time is up, then the call is made again.
                const { approvalId, expiresAtMs } = outcome.awaitingApproval;
                refusals = 0;
                await condition(
                  () => decided.has(approvalId),
                  Math.max(1, Math.min(expiresAtMs + APPROVAL_EXPIRY_MARGIN_MS - Date.now(), APPROVAL_RECHECK_MS)),
                );
              } else break;
              outcome = await call();
            }
            // A replayed run's call with no recorded answer: the run ends with it (no earlier history has one).
            if (outcome?.replayMiss && patched(REPLAY_MISS_PATCH)) missed ??= outcome.replayMiss;
          } catch (err) {
            if (isCancellation(err)) throw err;
            await bookkeeping.recordToolFailure({
              runId,
              stepIndex: first + i,
              toolCall,
              message: `The tool could not be reached: ${failureMessage(err)}`,
            });
          }
        }),
      );
      if (missed) return await end('failed', missed);
      step += toolCalls.length;
    }
  } catch (err) {
    if (isCancellation(err)) return await end('cancelled');
    await end('failed', { code: 'internal_error', message: `The run could not go on: ${failureMessage(err)}` });
  }
}
