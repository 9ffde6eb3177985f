/**
 * A webhook delivery's workflow on Temporal's time-skipping test server, its attempts stood in for: how long it
 * waits after an attempt refused for its project's share of the worker's slots.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { WEBHOOK_TASK_QUEUE } from '../../workflows/names.js';
import type { AttemptRefused } from '../../workflows/webhooks/activities.js';
import { deliveryWorkflowId } from '../../workflows/webhooks/client.js';
import type { webhookDeliveryWorkflow } from '../../workflows/webhooks/workflow.js';
import { workflowBundle } from '../support/api.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ownWorkflowEnvironment } from '../support/workflow-environment.js';

const RETRY = { initialIntervalMs: 1_000, maximumAttempts: 5, disableAfter: 10 };

// Its own server: its waits (up to a minute) pass in an instant only while no other suite's activity is running on it.
let env: TestWorkflowEnvironment;

/** The timers a delivery's workflow started, in seconds, in order, once it refused `refusals` and then delivered. */
async function waitsAfter(refusals: AttemptRefused[]): Promise<number[]> {
  const answers = [...refusals];
  // Deliveries' workflows and their attempts share this queue; no other suite polls it on the test server.
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: WEBHOOK_TASK_QUEUE,
    workflowBundle: await workflowBundle(),
    activities: {
      attemptWebhookDelivery: async (): Promise<AttemptRefused | undefined> => answers.shift(),
      failWebhookDelivery: async () => assert.fail('the delivery failed'),
    },
  });
  return worker.runUntil(async () => {
    const handle = await env.client.workflow.start<typeof webhookDeliveryWorkflow>('webhookDeliveryWorkflow', {
      taskQueue: WEBHOOK_TASK_QUEUE,
      workflowId: deliveryWorkflowId(`whd_${randomUUID().replaceAll('-', '')}`),
      args: [{ deliveryId: 'whd_refused', retry: RETRY, attemptsMade: 1 }],
    });
    await handle.result();
    const history = await handle.fetchHistory();
    return (history.events ?? []).flatMap((event) => {
      const timeout = event.timerStartedEventAttributes?.startToFireTimeout;
      return timeout ? [Number(timeout.seconds ?? 0) + (timeout.nanos ?? 0) / 1e9] : [];
    });
  });
}

describe('the webhook delivery workflow', () => {
  before(async function () {
    this.timeout(60_000);
    env = await ownWorkflowEnvironment();
  });
  after(async () => {
    await env?.teardown();
  });

  it('waits its usual backoff after a refusal while its project is refused seldom', async () => {
    const [backoff, ...waits] = await waitsAfter([{ attemptsMade: 1 }, { attemptsMade: 1, waitFactor: 1 }]);
    assert.equal(backoff, 1, "the retry's own backoff");
    // The first refusal's wait is 0.5 to 1 s, the second's 1 to 2 s.
    assert.equal(waits.length, 2);
    assert.ok(waits[0]! >= 0.5 && waits[0]! <= 1, `the first wait: ${waits[0]} s`);
    assert.ok(waits[1]! >= 1 && waits[1]! <= 2, `the second wait: ${waits[1]} s`);
  });

  it('waits as many times longer as the worker asks while its project is refused in a burst', async () => {
    const [, ...waits] = await waitsAfter([
      { attemptsMade: 1, waitFactor: 20 },
      { attemptsMade: 1, waitFactor: 20 },
    ]);
    assert.equal(waits.length, 2);
    assert.ok(waits[0]! >= 10 && waits[0]! <= 20, `the first wait: ${waits[0]} s`);
    // Twice as long again, up to a minute.
    assert.ok(waits[1]! >= 20 && waits[1]! <= 40, `the second wait: ${waits[1]} s`);
  });
});
