/**
 * The run workflow on Temporal's time-skipping test server, its activities stood in for
 * (test/workflows/run-activities.ts): how a run ends for each way its model and its plan can go.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import type { agentRunWorkflow } from '../../workflows/runs/workflow.js';
import { runWorkflowId } from '../../workflows/runs/ids.js';
import { eventually } from '../support/eventually.js';
import { ownWorkflowEnvironment, startSuiteWorker, type SuiteWorker } from '../support/workflow-environment.js';
import {
  callsStillGoing,
  Ledger,
  planOf,
  runActivities,
  toolCall,
  untilCancelled,
  type AgentBehaviour,
  type StartedPlan,
} from './run-activities.js';

const newRunId = () => `run_${randomUUID().replaceAll('-', '')}`;

let worker: SuiteWorker<ReturnType<typeof runActivities>>;

function startRun(runId: string) {
  return worker.env.client.workflow.start<typeof agentRunWorkflow>('agentRunWorkflow', {
    taskQueue: worker.taskQueue,
    workflowId: runWorkflowId(runId),
    args: [{ runId }],
  });
}

/** Runs one run to its end with the agent behaving as `behaviour` says; the ledger of what it did. */
async function runToEnd(behaviour: Partial<AgentBehaviour>, runId = newRunId()): Promise<Ledger> {
  const ledger = new Ledger();
  worker.use(runActivities(ledger, behaviour));
  await (await startRun(runId)).result();
  return ledger;
}

const planWith =
  (changes: Partial<StartedPlan>): AgentBehaviour['begin'] =>
  () => ({ admission: 'start', plan: planOf(changes) });

describe('the run workflow', () => {
  before(async () => {
    worker = await startSuiteWorker(runActivities(new Ledger()));
  });
  after(() => worker?.stop());

  it('completes with the reply that calls no tool, after calling the tools the model asked for', async () => {
    const runId = newRunId();
    const ledger = await runToEnd(
      { reply: ({ stepIndex }) => (stepIndex === 0 ? [toolCall('search_context', { query: 'tides' }), toolCall('calculator')] : null) },
      runId,
    );
    assert.deepEqual(ledger.endingOf(runId), { status: 'completed' });
    assert.deepEqual(
      ledger
        .inputsOf('callTool')
        .map((input) => [input.stepIndex, (input.toolCall as { name: string }).name])
        .sort(),
      [
        [1, 'search_context'],
        [2, 'calculator'],
      ],
    );
    assert.deepEqual(
      ledger.inputsOf('callModel').map((input) => input.stepIndex),
      [0, 3],
    );
  });

  it("records a tool that cannot be reached as that step's failure and goes on", async () => {
    const runId = newRunId();
    const ledger = new Ledger();
    const activities = {
      ...runActivities(ledger, { reply: ({ stepIndex }) => (stepIndex === 0 ? [toolCall('fetch_url')] : null) }),
      async callTool(): Promise<Record<string, never>> {
        throw ApplicationFailure.nonRetryable('connection refused', 'ToolUnreachable');
      },
    };
    worker.use(activities);
    await (await startRun(runId)).result();
    const [failure] = ledger.inputsOf('recordToolFailure');
    assert.equal(failure?.stepIndex, 1);
    assert.match(String(failure?.message), /^The tool could not be reached: connection refused/);
    assert.deepEqual(ledger.endingOf(runId), { status: 'completed' });
  });

  describe('max_steps', () => {
    it('fails with max_steps_reached when the model still calls tools once every step is used', async () => {
      const runId = newRunId();
      const ledger = await runToEnd({ begin: planWith({ maxSteps: 4 }), reply: () => [toolCall('calculator')] }, runId);
      assert.equal(ledger.endingOf(runId).status, 'failed');
      assert.deepEqual(ledger.endingOf(runId).error, {
        code: 'max_steps_reached',
        message: 'The run used its 4 steps without a final answer.',
      });
      assert.equal(ledger.inputsOf('callModel').length, 2);
      assert.equal(ledger.inputsOf('callTool').length, 2);
    });

    it('fails without calling any of them when the tool calls asked for do not fit in the steps left', async () => {
      const runId = newRunId();
      const ledger = await runToEnd(
        { begin: planWith({ maxSteps: 3 }), reply: () => [toolCall('calculator'), toolCall('search_context'), toolCall('fetch_url')] },
        runId,
      );
      assert.equal(ledger.endingOf(runId).error?.code, 'max_steps_reached');
      assert.match(ledger.endingOf(runId).error!.message, /3 tool call\(s\) with too few of its 3 steps left/);
      assert.deepEqual(ledger.inputsOf('callTool'), []);
    });
  });

  describe('model `auto`', () => {
    const routed = planWith({ candidates: ['model-a', 'model-b'], reason: 'auto chose model-a for a short text task.' });

    it('falls back to its next candidate once the first is still unavailable after its retries', async () => {
      const runId = newRunId();
      const ledger = await runToEnd(
        {
          begin: routed,
          reply: ({ model }) => {
            if (model === 'model-a') throw ApplicationFailure.retryable('model-a answered 503', 'unavailable');
            return null;
          },
        },
        runId,
      );
      assert.deepEqual(
        ledger.inputsOf('callModel').map((input) => [input.stepIndex, input.model]),
        [
          [0, 'model-a'],
          [0, 'model-a'],
          [1, 'model-b'],
        ],
      );
      assert.deepEqual(ledger.inputsOf('abandonStep'), [
        { runId, stepIndex: 0, error: { code: 'model_unavailable', message: 'model-a answered 503' } },
      ]);
      assert.deepEqual(ledger.inputsOf('noteFallback'), [
        {
          runId,
          model: 'model-b',
          reason: 'auto chose model-a for a short text task. Fell back from model-a to model-b: model-a answered 503',
        },
      ]);
      assert.deepEqual(ledger.endingOf(runId), { status: 'completed' });
    });

    it('does not fall back from an error that another try cannot mend', async () => {
      const runId = newRunId();
      const ledger = await runToEnd(
        {
          begin: routed,
          reply: () => {
            throw ApplicationFailure.nonRetryable('no such model at the provider', 'model_not_found');
          },
        },
        runId,
      );
      assert.deepEqual(
        ledger.inputsOf('callModel').map((input) => input.model),
        ['model-a'],
      );
      assert.deepEqual(ledger.inputsOf('noteFallback'), []);
      assert.deepEqual(ledger.endingOf(runId), {
        status: 'failed',
        error: { code: 'model_not_found', message: 'no such model at the provider' },
      });
    });

    it("fails with the last candidate's error once every candidate has failed", async () => {
      const runId = newRunId();
      const ledger = await runToEnd(
        {
          begin: routed,
          reply: ({ model }) => {
            throw ApplicationFailure.retryable(`${model} timed out`, 'timeout');
          },
        },
        runId,
      );
      assert.equal(ledger.inputsOf('noteFallback').length, 1);
      assert.deepEqual(ledger.endingOf(runId), { status: 'failed', error: { code: 'model_timeout', message: 'model-b timed out' } });
    });
  });

  it('retries a model named outright longer than a candidate of `auto` before the run fails', async () => {
    const runId = newRunId();
    const ledger = await runToEnd(
      {
        reply: () => {
          throw ApplicationFailure.retryable('echo-1 answered 429', 'rate_limited');
        },
      },
      runId,
    );
    // Six attempts, their backoff (1 s doubling) skipped by the test server.
    assert.equal(ledger.inputsOf('callModel').length, 6);
    assert.deepEqual(ledger.endingOf(runId), { status: 'failed', error: { code: 'model_rate_limited', message: 'echo-1 answered 429' } });
  });

  it("ends failed with internal_error, not the platform's own error as the model's, when a model step fails inside the platform", async () => {
    const runId = newRunId();
    const ledger = await runToEnd(
      {
        reply: () => {
          throw ApplicationFailure.retryable('duplicate key value violates unique constraint "run_steps_pkey"', 'DatabaseError');
        },
      },
      runId,
    );
    assert.equal(ledger.inputsOf('callModel').length, 6);
    const error = {
      code: 'internal_error',
      message: 'The model step could not go on (DatabaseError): duplicate key value violates unique constraint "run_steps_pkey"',
    };
    assert.deepEqual(ledger.inputsOf('abandonStep'), [{ runId, stepIndex: 0, error }]);
    assert.deepEqual(ledger.endingOf(runId), { status: 'failed', error });
  });

  it('ends cancelled when cancelled during a model call', async () => {
    const runId = newRunId();
    const ledger = new Ledger();
    worker.use(runActivities(ledger, { reply: untilCancelled }));
    const handle = await startRun(runId);
    await eventually(() => assert.equal(ledger.inputsOf('callModel').length, 1));
    await handle.cancel();
    await handle.result();
    assert.deepEqual(ledger.endingOf(runId), { status: 'cancelled' });
    await eventually(() => assert.equal(callsStillGoing(), 0, 'the model call was not cancelled'));
    assert.deepEqual(
      ledger.inputsOf('endRun').map((input) => input.status),
      ['cancelled'],
    );
  });

  it('ends failed, not started, when its plan refuses the run', async () => {
    const runId = newRunId();
    const error = { code: 'model_not_found', message: 'The agent names a model that no provider serves.' };
    const ledger = await runToEnd({ begin: () => ({ admission: 'start', plan: { ok: false, error } }) }, runId);
    assert.deepEqual(ledger.endingOf(runId), { status: 'failed', error });
    assert.deepEqual(ledger.inputsOf('callModel'), []);
  });

  describe('concurrency `enqueue`', () => {
    it('starts a waiting run as soon as the run ahead of it ends, woken by it rather than by its own poll', async () => {
      const [ahead, waiting] = [newRunId(), newRunId()];
      const ledger = new Ledger();
      const behaviour: Partial<AgentBehaviour> = {
        begin: (runId) =>
          runId === waiting && !ledger.endings.has(ahead) ? { admission: 'wait' } : { admission: 'start', plan: planOf() },
        ending: (runId) => ({ next: runId === ahead ? waiting : null }),
      };
      worker.use(runActivities(ledger, behaviour));
      // Neither result is awaited until both runs have ended: no time is skipped, so the waiting run's
      // once-a-minute re-check cannot be what starts it.
      const second = await startRun(waiting);
      await eventually(() => assert.equal(ledger.inputsOf('beginRun', waiting).length, 1));
      await startRun(ahead);
      await eventually(() => assert.deepEqual(ledger.endingOf(waiting), { status: 'completed' }));
      const events = (await second.fetchHistory()).events ?? [];
      assert.equal(events.filter((event) => event.workflowExecutionSignaledEventAttributes?.signalName === 'admit').length, 1);
      assert.equal(events.filter((event) => event.timerFiredEventAttributes).length, 0);
      assert.equal(ledger.inputsOf('beginRun', waiting).length, 2);
      assert.deepEqual(ledger.endingOf(ahead), { status: 'completed' });
    });

    it('waits a minute for a wake before it looks for its turn again on its own', async () => {
      const runId = newRunId();
      const ledger = new Ledger();
      worker.use(runActivities(ledger, { begin: () => ({ admission: 'wait' }) }));
      const run = await startRun(runId);
      const timers = await eventually(async () => {
        const events = (await run.fetchHistory()).events ?? [];
        const started = events.flatMap((event) => (event.timerStartedEventAttributes ? [event.timerStartedEventAttributes] : []));
        assert.equal(started.length, 1, 'no re-check was set');
        return started;
      });
      assert.equal(Number(String(timers[0]!.startToFireTimeout?.seconds)), 60);
      assert.equal(ledger.inputsOf('beginRun', runId).length, 1);
      await run.terminate('test over');
    });

    it('looks for its turn on its own ever less often, from every minute to every hour, so a long wait keeps a short history', async () => {
      // Its own server: time skips only while no other suite's activity runs on it.
      const env = await ownWorkflowEnvironment();
      const own = await startSuiteWorker(runActivities(new Ledger()), env);
      try {
        const runId = newRunId();
        const ledger = new Ledger();
        // No wake comes: it looks 12 times on its own, and is gone at the 12th.
        own.use(runActivities(ledger, { begin: () => ({ admission: ledger.inputsOf('beginRun', runId).length < 12 ? 'wait' : 'gone' }) }));
        const run = await own.env.client.workflow.start<typeof agentRunWorkflow>('agentRunWorkflow', {
          taskQueue: own.taskQueue,
          workflowId: runWorkflowId(runId),
          args: [{ runId }],
        });
        await run.result();
        const events = (await run.fetchHistory()).events ?? [];
        const waits = events.flatMap((event) =>
          event.timerStartedEventAttributes ? [Number(String(event.timerStartedEventAttributes.startToFireTimeout?.seconds))] : [],
        );
        // Six hours in 11 looks: a look a minute would have made 363, and a week 10,080.
        assert.deepEqual(waits, [60, 120, 240, 480, 960, 1_920, 3_600, 3_600, 3_600, 3_600, 3_600]);
        assert.equal(ledger.inputsOf('beginRun', runId).length, 12);
      } finally {
        await own.stop();
        await env.teardown();
      }
    });

    it('ends without starting a run that is gone by its turn', async () => {
      const runId = newRunId();
      const ledger = await runToEnd({ begin: () => ({ admission: 'gone' }) }, runId);
      assert.deepEqual(
        ledger.calls.map((call) => call.activity),
        ['beginRun'],
      );
    });
  });
});
