/**
 * Temporal's time-skipping test server (installed by scripts/deps), started once per test run, and a worker
 * on it per suite that runs the real workflow bundle with the activities each test gives. No other service
 * is needed: timers and retry backoffs pass in an instant while a test waits on a workflow's result.
 */
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { findTool } from '../../cli/tools.js';
import { quietTemporalRuntime, workflowBundle } from './api.js';
import { HEARTBEAT_MS } from '../../workflows/heartbeats.js';

let environment: Promise<TestWorkflowEnvironment> | undefined;

export function workflowEnvironment(): Promise<TestWorkflowEnvironment> {
  quietTemporalRuntime();
  return (environment ??= ownWorkflowEnvironment());
}

/**
 * A time-skipping server of the caller's own, for a suite whose waits are long: on the shared one, an activity another
 * suite left running keeps time from skipping, and timers pass in real time (a minute's wait took 53 s).
 */
export function ownWorkflowEnvironment(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: findTool('temporal-test-server') } },
  });
}

export async function stopWorkflowEnvironment(): Promise<void> {
  const started = environment;
  environment = undefined;
  await (await started)?.teardown();
}

type Activities = Record<string, (input: never) => Promise<unknown>>;

export interface SuiteWorker<A extends Activities> {
  env: TestWorkflowEnvironment;
  /** The worker's own task queue; child workflows and activities inherit it. */
  taskQueue: string;
  /** The activities the worker runs from now on (the next test's). */
  use(activities: A): void;
  stop(): Promise<void>;
}

/**
 * A worker for a whole suite (one per test would cost seconds each), whose activities are those last given
 * to `use`; `activities` names them all. On the shared server unless given one (`ownWorkflowEnvironment`).
 */
export async function startSuiteWorker<A extends Activities>(activities: A, env?: TestWorkflowEnvironment): Promise<SuiteWorker<A>> {
  env ??= await workflowEnvironment();
  const taskQueue = `workflow-test-${randomUUID()}`;
  let current = activities;
  const dispatching = Object.fromEntries(
    Object.keys(activities).map((name) => [name, (input: unknown) => (current[name] as (input: unknown) => Promise<unknown>)(input)]),
  );
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities: dispatching,
    // As in production (workflows/worker.ts): a cancellation reaches a heartbeating activity within HEARTBEAT_MS.
    maxHeartbeatThrottleInterval: HEARTBEAT_MS,
  });
  const running = worker.run();
  return {
    env,
    taskQueue,
    use: (next) => {
      current = next;
    },
    stop: async () => {
      worker.shutdown();
      await running;
    },
  };
}
