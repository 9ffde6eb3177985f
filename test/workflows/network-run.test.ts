/**
 * The network workflow on Temporal's time-skipping test server, its activities stood in for
 * (test/workflows/network-activities.ts) and its hops real child runs: which member each router picks, with
 * what input and reason, and how `max_hops`, a failed member and a cancellation end the network run.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { networkRunWorkflow } from '../../workflows/networks/workflow.js';
import { networkRunWorkflowId } from '../../workflows/networks/ids.js';
import { eventually } from '../support/eventually.js';
import { startSuiteWorker, type SuiteWorker } from '../support/workflow-environment.js';
import { Ledger, toolCall, untilCancelled, runActivities } from './run-activities.js';
import { hopsOf, networkActivities, networkPlanOf, type NetworkBehaviour } from './network-activities.js';

const newRunId = () => `run_${randomUUID().replaceAll('-', '')}`;

let worker: SuiteWorker<ReturnType<typeof networkActivities>>;

function startNetworkRun(runId: string) {
  return worker.env.client.workflow.start<typeof networkRunWorkflow>('networkRunWorkflow', {
    taskQueue: worker.taskQueue,
    workflowId: networkRunWorkflowId(runId),
    args: [{ runId }],
  });
}

/** Runs one network run to its end with the network behaving as `behaviour` says. */
async function networkRunToEnd(behaviour: Partial<NetworkBehaviour>): Promise<{ runId: string; ledger: Ledger }> {
  const runId = newRunId();
  const ledger = new Ledger();
  worker.use(networkActivities(ledger, behaviour));
  await (await startNetworkRun(runId)).result();
  return { runId, ledger };
}

const handoffTo = (to: string, reason: string) => toolCall('handoff', { to, reason, message: `Over to ${to}.` });

describe('the network workflow', () => {
  before(async () => {
    worker = await startSuiteWorker(networkActivities(new Ledger()));
  });
  after(() => worker?.stop());

  describe('router `sequential`', () => {
    it("runs each member once, in order, each with the previous hop's answer, then completes", async () => {
      const { runId, ledger } = await networkRunToEnd({ plan: () => networkPlanOf({ members: ['agent_a', 'agent_b', 'agent_c'] }) });
      assert.deepEqual(
        hopsOf(ledger, runId).map(({ hopIndex, agentId, decision, input }) => ({ hopIndex, agentId, decision, input })),
        [
          {
            hopIndex: 0,
            agentId: 'agent_a',
            decision: { router: 'sequential', reason: 'Member 1 of 3 in sequence.' },
            input: { from: 'network' },
          },
          {
            hopIndex: 1,
            agentId: 'agent_b',
            decision: { router: 'sequential', reason: 'Member 2 of 3 in sequence.' },
            input: { from: 'previous_hop' },
          },
          {
            hopIndex: 2,
            agentId: 'agent_c',
            decision: { router: 'sequential', reason: 'Member 3 of 3 in sequence.' },
            input: { from: 'previous_hop' },
          },
        ],
      );
      for (const hop of hopsOf(ledger, runId)) assert.deepEqual(ledger.endingOf(hop.childRunId), { status: 'completed' });
      assert.deepEqual(ledger.endingOf(runId), { status: 'completed' });
    });

    it('fails with max_hops_exceeded when the members outnumber max_hops, after running max_hops of them', async () => {
      const { runId, ledger } = await networkRunToEnd({
        plan: () => networkPlanOf({ members: ['agent_a', 'agent_b', 'agent_c'], maxHops: 2 }),
      });
      assert.deepEqual(
        hopsOf(ledger, runId).map((hop) => hop.agentId),
        ['agent_a', 'agent_b'],
      );
      assert.deepEqual(ledger.endingOf(runId), {
        status: 'failed',
        error: { code: 'max_hops_exceeded', message: 'The network run reached its limit of 2 hop(s) before finishing.' },
      });
    });

    it('fails with member_failed, running no further member, when a hop fails', async () => {
      const { runId, ledger } = await networkRunToEnd({
        plan: () => networkPlanOf({ members: ['agent_a', 'agent_b'] }),
        // agent_a keeps calling tools: its hop runs out of steps.
        reply: (agentId) => (agentId === 'agent_a' ? [toolCall('calculator')] : null),
      });
      assert.deepEqual(
        hopsOf(ledger, runId).map((hop) => hop.agentId),
        ['agent_a'],
      );
      assert.deepEqual(ledger.endingOf(runId), {
        status: 'failed',
        error: { code: 'member_failed', message: 'Hop 0 (agent_a) ended failed: The run used its 10 steps without a final answer.' },
      });
    });
  });

  describe('router `supervisor`', () => {
    const supervised = () => networkPlanOf({ router: 'supervisor', members: ['agent_a', 'agent_b'], supervisorModel: 'supervisor-1' });

    it('runs the members its model picks, with the input and reason it gives, until it finishes', async () => {
      const choices = [
        { next: 'agent_b', reason: 'Research comes first.', input: 'Find three sources on tides.' },
        { next: 'agent_a', reason: 'Now write it up.', input: null },
        { next: null, reason: 'The summary answers the task.', input: null },
      ];
      const { runId, ledger } = await networkRunToEnd({ plan: supervised, supervise: ({ stepIndex }) => choices[stepIndex]! });
      assert.deepEqual(
        ledger.inputsOf('superviseNext').map(({ stepIndex, model }) => [stepIndex, model]),
        [
          [0, 'supervisor-1'],
          [1, 'supervisor-1'],
          [2, 'supervisor-1'],
        ],
      );
      assert.deepEqual(
        hopsOf(ledger, runId).map(({ agentId, decision, input }) => ({ agentId, decision, input })),
        [
          {
            agentId: 'agent_b',
            decision: { router: 'supervisor', reason: 'Research comes first.' },
            input: { from: 'supervisor', text: 'Find three sources on tides.' },
          },
          { agentId: 'agent_a', decision: { router: 'supervisor', reason: 'Now write it up.' }, input: { from: 'network' } },
        ],
      );
      assert.deepEqual(ledger.endingOf(runId), { status: 'completed' });
    });

    it('fails with invalid_routing_decision, starting no hop, when its model names no member', async () => {
      const invalid = 'The supervisor chose agent_z, which is not a member.';
      const { runId, ledger } = await networkRunToEnd({
        plan: supervised,
        supervise: () => ({ next: null, reason: 'agent_z knows.', input: null, invalid }),
      });
      assert.deepEqual(hopsOf(ledger, runId), []);
      assert.deepEqual(ledger.endingOf(runId), { status: 'failed', error: { code: 'invalid_routing_decision', message: invalid } });
    });

    it('fails with max_hops_exceeded when its model never finishes', async () => {
      const { runId, ledger } = await networkRunToEnd({
        plan: () => ({ ...supervised(), maxHops: 2 }),
        supervise: () => ({ next: 'agent_a', reason: 'Once more.', input: null }),
      });
      assert.equal(hopsOf(ledger, runId).length, 2);
      assert.equal(ledger.endingOf(runId).error?.code, 'max_hops_exceeded');
    });
  });

  describe('router `handoff`', () => {
    const handoffPlan =
      (maxHops = 10) =>
      () =>
        networkPlanOf({ router: 'handoff', members: ['agent_a', 'agent_b', 'agent_c'], maxHops });

    it('gives the task to the first member, then to whichever member each hop hands it to, until one answers', async () => {
      const { runId, ledger } = await networkRunToEnd({
        plan: handoffPlan(),
        reply: (agentId, stepIndex) => (agentId === 'agent_a' && stepIndex === 0 ? [handoffTo('agent_c', 'It needs a translator.')] : null),
      });
      assert.deepEqual(
        hopsOf(ledger, runId).map(({ agentId, decision, input }) => ({ agentId, decision, input })),
        [
          { agentId: 'agent_a', decision: { router: 'handoff', reason: 'The first member takes the task.' }, input: { from: 'network' } },
          {
            agentId: 'agent_c',
            decision: { router: 'handoff', reason: 'Handed over by agent_a: It needs a translator.' },
            input: { from: 'handoff' },
          },
        ],
      );
      assert.deepEqual(ledger.endingOf(runId), { status: 'completed' });
    });

    it('fails with max_hops_exceeded when the members keep handing the task back and forth', async () => {
      const { runId, ledger } = await networkRunToEnd({
        plan: handoffPlan(3),
        reply: (agentId) => [agentId === 'agent_a' ? handoffTo('agent_b', 'Yours.') : handoffTo('agent_a', 'No, yours.')],
      });
      assert.deepEqual(
        hopsOf(ledger, runId).map((hop) => hop.agentId),
        ['agent_a', 'agent_b', 'agent_a'],
      );
      assert.equal(ledger.endingOf(runId).error?.code, 'max_hops_exceeded');
    });
  });

  it('ends cancelled, and its hop in flight with it, when cancelled during a hop', async () => {
    const runId = newRunId();
    const ledger = new Ledger();
    const activities = networkActivities(ledger);
    worker.use({ ...activities, callModel: runActivities(ledger, { reply: untilCancelled }).callModel });
    const handle = await startNetworkRun(runId);
    await eventually(() => assert.equal(ledger.inputsOf('callModel').length, 1));
    await handle.cancel();
    await handle.result();
    const [hop] = hopsOf(ledger, runId);
    assert.deepEqual(ledger.endingOf(hop!.childRunId), { status: 'cancelled' });
    assert.deepEqual(ledger.endingOf(runId), { status: 'cancelled' });
  });
});
