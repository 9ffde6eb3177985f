/**
 * A model or tool call made for a run's step outlives the attempt that made it when only the attempt is given
 * up. A worker that cannot reach Temporal for longer than an activity's heartbeat timeout cancels the attempt
 * itself (Temporal times it out too, and tries again once it is back), but the call in hand is paid for, or
 * has had its effects: it goes on, its result is recorded, and the next attempt, on this worker, joins it
 * instead of calling again. A cancellation of the run, Temporal's word that the run's workflow has ended (the
 * attempt "not found": a cancelled run's workflow ends at once), a pause or reset of the activity, the worker's
 * shutdown and the activity's start-to-close timeout end the call.
 *
 * Temporal's word of a cancellation comes with the attempt's next heartbeat (`heartbeats.ts`). The worker that
 * ends a cancelled run (its workflow's, which is where the run's calls are handed first) ends the run's calls
 * in flight on it at once instead (`endCallsOfCancelledRun`), and begins none of the run's steps afterwards; a
 * call on another worker hears at its next heartbeat.
 */
import { ApplicationFailure, CancelledFailure, type Context } from '@temporalio/activity';
import { LRUCache } from 'lru-cache';

interface CallInFlight {
  runId: string;
  /** Settles (never rejects) when the call and what records it have ended. */
  settled: Promise<void>;
  abort(reason: unknown): void;
}

const inFlight = new Map<string, CallInFlight>();

// The runs this worker ended as cancelled, for longer than any of their attempts can last (a model call's is 10 minutes).
const cancelledHere = new LRUCache<string, true>({ max: 10_000, ttl: 15 * 60_000 });

/**
 * What a step of a run this worker ended as cancelled throws while Temporal has not yet told its attempt: final,
 * so that the attempt is not tried again (the run's workflow no longer waits for it).
 */
const RUN_CANCELLED = 'run_cancelled';
const runCancelledHere = () => ApplicationFailure.nonRetryable('The run was cancelled.', RUN_CANCELLED);

/** Calls `abort` when the attempt is cancelled for a reason that ends its call too. */
function onCallCancelled(context: Context, abort: (reason: unknown) => void): void {
  const signal = context.cancellationSignal;
  const follow = () => {
    const details = context.cancellationDetails;
    // The worker's own time-out of the attempt says "timed out" (and "not found"); Temporal's answer that the
    // attempt is not found, with no time-out, means the run's workflow has ended (a cancelled run's ends at once).
    const onlyTheAttempt = details !== undefined && details.timedOut && !details.cancelRequested;
    if (onlyTheAttempt && !details.workerShutdown && !details.paused && !details.reset) {
      context.log.warn('Temporal gave up this attempt or could not be reached; its call goes on and is recorded for the next attempt');
      return;
    }
    abort(signal.reason);
  };
  if (signal.aborted) follow();
  else signal.addEventListener('abort', follow, { once: true });
}

/**
 * Waits until the call an earlier attempt on this worker is making for `key` (a step of `runId`), if any, has
 * ended; throws if the run has been cancelled here, so that the step is not begun again.
 */
export async function joinCallInFlight(context: Context, runId: string, key: string): Promise<void> {
  const call = inFlight.get(key);
  if (call) {
    onCallCancelled(context, (reason) => call.abort(reason));
    await call.settled;
  }
  if (cancelledHere.has(runId)) throw runCancelledHere();
}

/**
 * What an attempt that failed throws when its call was ended (`callSignal`, or the attempt itself before any call
 * was made, aborted): Temporal's cancellation of it, or, when the run was cancelled here before Temporal told the
 * attempt, the run's cancellation as a final failure. Undefined when nothing was ended.
 */
export function endedCall(context: Context, callSignal: AbortSignal | undefined): Error | undefined {
  const signal = callSignal ?? context.cancellationSignal;
  if (!signal.aborted) return undefined;
  const reason: unknown = signal.reason;
  if (!context.cancellationSignal.aborted && reason instanceof ApplicationFailure && reason.type === RUN_CANCELLED) return reason;
  return new CancelledFailure('the run was cancelled');
}

/**
 * Makes the call for `key` (a step of `runId`), with a signal that aborts only when the call must end; a later
 * attempt on this worker joins it (joinCallInFlight) rather than making it again.
 */
export function callOutlivingAttempt<T>(
  context: Context,
  runId: string,
  key: string,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  onCallCancelled(context, (reason) => controller.abort(reason));
  const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(context.info.startToCloseTimeoutMs)]);
  const result = call(signal);
  const entry: CallInFlight = {
    runId,
    settled: result.then(
      () => undefined,
      () => undefined,
    ),
    abort: (reason) => controller.abort(reason),
  };
  inFlight.set(key, entry);
  void entry.settled.then(() => {
    if (inFlight.get(key) === entry) inFlight.delete(key);
  });
  return result;
}

/** Ends the calls in flight on this worker for `runId`, a run that has just been cancelled, as a cancellation would. */
export function endCallsOfCancelledRun(runId: string): void {
  cancelledHere.set(runId, true);
  for (const call of inFlight.values()) if (call.runId === runId) call.abort(runCancelledHere());
}
