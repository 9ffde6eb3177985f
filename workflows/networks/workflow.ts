/**
 * A network run: a parent run whose hops are child runs of its members, each a child workflow. The
 * router decides each hop (sequence, supervisor or handoff) with a recorded reason; `max_hops` bounds
 * them all. Cancelling the network run cancels the hop in flight.
 */
import { CancellationScope, condition, executeChild, getExternalWorkflowHandle, isCancellation, proxyActivities, setHandler } from '@temporalio/workflow';
import type { NetworkActivities, HopInput, HopStart, HopOutcome } from './activities.js';
import type { RunActivities } from '../runs/activities.js';
import type { HopDecision, RunError } from '../../records/runs.js';
import { admitSignal, agentRunWorkflow } from '../runs/workflow.js';
import { runWorkflowId } from '../runs/ids.js';
import { networkRunWorkflowId } from './ids.js';
import { judgeEndedRun } from '../quality/workflow.js';
import { MODEL_RETRY_MAX_INTERVAL_MS } from '../../models/retry-interval.js';
import { FINAL_MODEL_FAILURES } from '../../models/failure-kinds.js';
import { failureMessage } from '../failure-message.js';

const bookkeeping = proxyActivities<RunActivities & NetworkActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

const supervisor = proxyActivities<NetworkActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: MODEL_RETRY_MAX_INTERVAL_MS, maximumAttempts: 6, nonRetryableErrorTypes: [...FINAL_MODEL_FAILURES] },
});

interface NextHop {
  agentId: string;
  decision: HopDecision;
  input: HopInput;
}

export async function networkRunWorkflow({ runId }: { runId: string }): Promise<void> {
  let admitted = false;
  setHandler(admitSignal, () => {
    admitted = true;
  });
  const end = (status: 'completed' | 'failed' | 'cancelled', error?: RunError) =>
    CancellationScope.nonCancellable(async () => {
      const ending = await bookkeeping.endRun({ runId, status, error });
      const { next } = ending;
      if (next && next !== runId) await getExternalWorkflowHandle(networkRunWorkflowId(next)).signal(admitSignal).catch(() => undefined);
      await judgeEndedRun(runId, ending);
    });

  try {
    for (;;) {
      const admission = await bookkeeping.admitNetworkRun({ runId });
      if (admission === 'gone') return;
      if (admission === 'start') break;
      admitted = false;
      await condition(() => admitted, '10 seconds');
    }

    const plan = await bookkeeping.startNetworkRun({ runId });
    if (!plan.ok) return await end('failed', plan.error);

    let previous: { agentId: string; handoff: { to: string; reason: string } | null } | null = null;
    let supervisorStep = 0;
    for (let hop = 0; ; hop++) {
      let next: NextHop | null = null;
      if (plan.router === 'sequential') {
        if (hop < plan.members.length) {
          next = {
            agentId: plan.members[hop]!,
            decision: { router: 'sequential', reason: `Member ${hop + 1} of ${plan.members.length} in sequence.` },
            input: hop === 0 ? { from: 'network' } : { from: 'previous_hop' },
          };
        }
      } else if (plan.router === 'supervisor') {
        const choice = await supervisor.superviseNext({ runId, stepIndex: supervisorStep++, model: plan.supervisorModel! });
        if (choice.invalid) return await end('failed', { code: 'invalid_routing_decision', message: choice.invalid });
        if (choice.next) {
          next = { agentId: choice.next, decision: { router: 'supervisor', reason: choice.reason }, input: choice.input ? { from: 'supervisor', text: choice.input } : { from: 'network' } };
        }
      } else if (hop === 0) {
        next = { agentId: plan.members[0]!, decision: { router: 'handoff', reason: 'The first member takes the task.' }, input: { from: 'network' } };
      } else if (previous?.handoff) {
        next = { agentId: previous.handoff.to, decision: { router: 'handoff', reason: `Handed over by ${previous.agentId}: ${previous.handoff.reason}` }, input: { from: 'handoff' } };
      }
      if (!next) return await end('completed');
      if (hop >= plan.maxHops) {
        return await end('failed', { code: 'max_hops_exceeded', message: `The network run reached its limit of ${plan.maxHops} hop(s) before finishing.` });
      }

      const started: HopStart = await bookkeeping.startHop({ runId, hopIndex: hop, agentId: next.agentId, decision: next.decision, input: next.input });
      if (!started.ok) return await end('failed', started.error);
      await executeChild(agentRunWorkflow, { workflowId: runWorkflowId(started.childRunId), args: [{ runId: started.childRunId }] });
      const outcome: HopOutcome = await bookkeeping.hopOutcome({ childRunId: started.childRunId });
      if (outcome.status === 'cancelled') return await end('cancelled');
      if (outcome.status !== 'completed') {
        return await end('failed', { code: 'member_failed', message: `Hop ${hop} (${outcome.agentId}) ended ${outcome.status}: ${outcome.error?.message ?? 'no reason given'}` });
      }
      previous = { agentId: outcome.agentId, handoff: outcome.handoff ? { to: outcome.handoff.to, reason: outcome.handoff.reason } : null };
    }
  } catch (err) {
    if (isCancellation(err)) return await end('cancelled');
    await end('failed', { code: 'internal_error', message: `The network run could not go on: ${failureMessage(err)}` });
  }
}
