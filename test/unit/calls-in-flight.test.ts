import assert from 'node:assert/strict';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { ActivityCancellationDetails } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { callOutlivingAttempt, endCallsOfCancelledRun, endedCall, joinCallInFlight } from '../../workflows/calls-in-flight.js';

/** A call that ends when told to, or rejects when its signal aborts. */
function pendingCall() {
  let finish!: (value: string) => void;
  let signal: AbortSignal | undefined;
  const call = (given: AbortSignal) => {
    signal = given;
    return new Promise<string>((resolve, reject) => {
      finish = resolve;
      given.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    });
  };
  return { call, finish: (value: string) => finish(value), signal: () => signal! };
}

/** The attempts' warnings that a call goes on. */
let warnings: string[] = [];
const quiet = () => {};
const logger = {
  log: quiet,
  trace: quiet,
  debug: quiet,
  info: quiet,
  error: quiet,
  warn: (message: string) => {
    if (message.includes('its call goes on')) warnings.push(message);
  },
};
const attempt = () => new MockActivityEnvironment({ startToCloseTimeoutMs: 60_000 }, { logger });

describe('a step call in flight when its attempt is cancelled', () => {
  beforeEach(() => (warnings = []));

  it('goes on when only the attempt timed out (the worker timing it out while Temporal is unreachable), and answers', async () => {
    for (const reason of [{ timedOut: true, notFound: true }, { timedOut: true }]) {
      const env = attempt();
      const pending = pendingCall();
      const answer = env.run(() => callOutlivingAttempt(Context.current(), 'run', `step:${JSON.stringify(reason)}`, pending.call));
      env.cancel('TIMED_OUT', new ActivityCancellationDetails(reason));
      assert.equal(pending.signal().aborted, false, JSON.stringify(reason));
      pending.finish('the reply');
      assert.equal(await answer, 'the reply');
    }
    assert.equal(warnings.length, 2, 'the operator is told, once per attempt given up');
  });

  it('ends when the run is cancelled, its workflow has ended, the activity is paused or reset, or the worker shuts down', async () => {
    for (const reason of [
      { cancelRequested: true },
      { notFound: true },
      { paused: true },
      { reset: true },
      { timedOut: true, workerShutdown: true },
    ]) {
      const env = attempt();
      const pending = pendingCall();
      const answer = env.run(() => callOutlivingAttempt(Context.current(), 'run', `step:${JSON.stringify(reason)}`, pending.call));
      env.cancel('CANCELLED', new ActivityCancellationDetails(reason));
      assert.equal(pending.signal().aborted, true, JSON.stringify(reason));
      await assert.rejects(answer, /aborted/);
    }
    assert.deepEqual(warnings, []);
  });

  it('is joined by the next attempt of the same step, which waits for it rather than calling again', async () => {
    const first = attempt();
    const pending = pendingCall();
    const answer = first.run(() => callOutlivingAttempt(Context.current(), 'run', 'step:joined', pending.call));
    first.cancel('TIMED_OUT', new ActivityCancellationDetails({ timedOut: true, notFound: true }));
    let joined = false;
    const second = attempt().run(() => joinCallInFlight(Context.current(), 'run', 'step:joined').then(() => (joined = true)));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(joined, false, 'the next attempt went on while the call was in flight');
    pending.finish('the reply');
    await second;
    assert.equal(await answer, 'the reply');
    // Nothing is left to join once it has ended.
    await attempt().run(() => joinCallInFlight(Context.current(), 'run', 'step:joined'));
  });

  it("ends at once when this worker ends its run as cancelled, before Temporal's word comes with a heartbeat; another run's call goes on", async () => {
    const env = attempt();
    const cancelled = pendingCall();
    const other = pendingCall();
    const answer = env.run(() => callOutlivingAttempt(Context.current(), 'cancelled-run', 'model:cancelled-run:0', cancelled.call));
    const otherAnswer = attempt().run(() => callOutlivingAttempt(Context.current(), 'other-run', 'model:other-run:0', other.call));
    endCallsOfCancelledRun('cancelled-run');
    assert.equal(cancelled.signal().aborted, true);
    await assert.rejects(answer, /aborted/);
    // The attempt fails for good, as Temporal has not told it yet: it is not tried again.
    const ended = await env.run(async () => endedCall(Context.current(), cancelled.signal()));
    assert.ok(ended instanceof ApplicationFailure && ended.nonRetryable && ended.type === 'run_cancelled', String(ended));
    assert.equal(other.signal().aborted, false);
    // A next attempt at one of its steps on this worker begins nothing; another run's steps go on.
    await assert.rejects(
      attempt().run(() => joinCallInFlight(Context.current(), 'cancelled-run', 'model:cancelled-run:0')),
      (err) => err instanceof ApplicationFailure && err.type === 'run_cancelled',
    );
    await attempt().run(() => joinCallInFlight(Context.current(), 'other-run', 'model:other-run:1'));
    other.finish('the reply');
    assert.equal(await otherAnswer, 'the reply');
  });

  it("ends with Temporal's cancellation once Temporal has told the attempt, whoever aborted its call", async () => {
    const env = attempt();
    const pending = pendingCall();
    const answer = env.run(() => callOutlivingAttempt(Context.current(), 'told-run', 'model:told-run:0', pending.call));
    endCallsOfCancelledRun('told-run');
    await assert.rejects(answer, /aborted/);
    env.cancel('CANCELLED', new ActivityCancellationDetails({ cancelRequested: true }));
    assert.ok((await env.run(async () => endedCall(Context.current(), pending.signal()))) instanceof CancelledFailure);
  });

  it('is ended by the run being cancelled while the next attempt waits for it', async () => {
    const first = attempt();
    const pending = pendingCall();
    const answer = first.run(() => callOutlivingAttempt(Context.current(), 'run', 'step:cancelled-later', pending.call));
    first.cancel('TIMED_OUT', new ActivityCancellationDetails({ timedOut: true, notFound: true }));
    const next = attempt();
    const waiting = next.run(() => joinCallInFlight(Context.current(), 'run', 'step:cancelled-later'));
    next.cancel('CANCELLED', new ActivityCancellationDetails({ cancelRequested: true }));
    await assert.rejects(answer, /aborted/);
    await waiting;
  });
});
