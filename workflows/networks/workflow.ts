/**
 * A network run: a parent run whose hops are child runs of its members, each a child workflow. The
 * router (routers/, one module per type) decides each hop with a recorded reason; `max_hops` bounds
 * them all. Cancelling the network run cancels the hop in flight.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
} from '@temporalio/workflow';
import type { NetworkActivities, HopStart, HopOutcome } from './activities.js';
import type { RunActivities } from '../runs/activities.js';
import type { RunError } from '../../records/runs.js';
import { admitSignal, agentRunWorkflow, queuedRunRecheckMs } from '../runs/workflow.js';
import { runWorkflowId } from '../runs/ids.js';
import { networkRunWorkflowId } from './ids.js';
import { judgeEndedRun } from '../quality/workflow.js';
import { wakeOnThread } from '../runs/thread-turn.js';
import { learnFromEndedRun } from '../memory/workflow.js';
import { MODEL_RETRY_MAX_INTERVAL_MS } from '../../models/retry-interval.js';
import { COST_LIMIT_REACHED, FINAL_MODEL_FAILURES } from '../../models/failure-kinds.js';
import { failureMessage } from '../failure-message.js';
import { nextHop, type RouterCalls } from './routers/next-hop.js';
import type { RouterState } from './routers/hop.js';

// The run's bookkeeping (admission, start, each hop's child run and outcome, the end) as local activities,
// as an agent run's: short database writes run by the worker that runs the workflow, within its workflow
// task, so a hop costs no activity task to dispatch and no workflow task to wake. They are safe to run
// again (a retried hop finds the child run it created). The supervisor's model calls stay activities:
// long, heartbeating, retried on any worker.
const bookkeeping = proxyLocalActivities<RunActivities & NetworkActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

const supervisor = proxyActivities<NetworkActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '5 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: MODEL_RETRY_MAX_INTERVAL_MS,
    maximumAttempts: 6,
    nonRetryableErrorTypes: [...FINAL_MODEL_FAILURES],
  },
});

export async function networkRunWorkflow({ runId }: { runId: string }): Promise<void> {
  let admitted = false;
  setHandler(admitSignal, () => {
    admitted = true;
  });
  const end = (status: 'completed' | 'failed' | 'cancelled', error?: RunError) =>
    CancellationScope.nonCancellable(async () => {
      const ending = await bookkeeping.endRun({ runId, status, error });
      const { next } = ending;
      if (next && next !== runId)
        await getExternalWorkflowHandle(networkRunWorkflowId(next))
          .signal(admitSignal)
          .catch(() => undefined);
      await wakeOnThread(ending);
      await learnFromEndedRun(runId, ending);
      await judgeEndedRun(runId, ending);
    });

  try {
    for (let looks = 0; ; looks++) {
      const admission = await bookkeeping.admitNetworkRun({ runId });
      if (admission === 'gone') return;
      if (admission === 'start') break;
      admitted = false;
      await condition(() => admitted, queuedRunRecheckMs(looks));
    }

    const plan = await bookkeeping.startNetworkRun({ runId });
    if (!plan.ok) return await end('failed', plan.error);

    let previous: RouterState['previous'] = null;
    const calls: RouterCalls = { supervise: (stepIndex) => supervisor.superviseNext({ runId, stepIndex, model: plan.supervisorModel! }) };
    for (let hop = 0; ; hop++) {
      const decided = await nextHop(plan.router, { hop, members: plan.members, previous }, calls);
      if (decided.action === 'finish') return await end('completed');
      if (decided.action === 'fail') return await end('failed', decided.error);
      const next = decided.hop;
      if (hop >= plan.maxHops) {
        return await end('failed', {
          code: 'max_hops_exceeded',
          message: `The network run reached its limit of ${plan.maxHops} hop(s) before finishing.`,
        });
      }

      const started: HopStart = await bookkeeping.startHop({
        runId,
        hopIndex: hop,
        agentId: next.agentId,
        decision: next.decision,
        input: next.input,
      });
      if (!started.ok) return await end('failed', started.error);
      await executeChild(agentRunWorkflow, { workflowId: runWorkflowId(started.childRunId), args: [{ runId: started.childRunId }] });
      const outcome: HopOutcome = await bookkeeping.hopOutcome({ childRunId: started.childRunId });
      if (outcome.status === 'cancelled') return await end('cancelled');
      if (outcome.status !== 'completed') {
        // A hop stopped by a cost cap stops its network for the same reason.
        return await end('failed', {
          code: outcome.error?.code === COST_LIMIT_REACHED ? COST_LIMIT_REACHED : 'member_failed',
          message: `Hop ${hop} (${outcome.agentId}) ended ${outcome.status}: ${outcome.error?.message ?? 'no reason given'}`,
        });
      }
      previous = { agentId: outcome.agentId, handoff: outcome.handoff ? { to: outcome.handoff.to, reason: outcome.handoff.reason } : null };
    }
  } catch (err) {
    if (isCancellation(err)) return await end('cancelled');
    // The supervisor's call not made: its worst case would not fit the network run's cap or a budget.
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.type === COST_LIMIT_REACHED)
      return await end('failed', { code: COST_LIMIT_REACHED, message: cause.message });
    await end('failed', { code: 'internal_error', message: `The network run could not go on: ${failureMessage(err)}` });
  }
}
