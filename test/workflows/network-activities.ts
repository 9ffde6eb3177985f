/**
 * Stand-ins for the network workflow's activities (workflows/networks/activities.ts), all in this one place,
 * beside the run activities its hops (child runs) use: a network that starts at once, hops that start as
 * child runs named after their network run, and members whose model answers at once.
 */
import type { HopDecision, RunError } from '../../records/runs.js';
import type { HopInput, HopOutcome, HopStart, NetworkActivities, NetworkPlan } from '../../workflows/networks/activities.js';
import type { SupervisorChoice } from '../../workflows/networks/supervisor.js';
import type { ToolCall } from '../../models/messages.js';
import { runActivities, type Ledger } from './run-activities.js';

export type StartedNetworkPlan = Extract<NetworkPlan, { ok: true }>;

export function networkPlanOf(changes: Partial<StartedNetworkPlan> = {}): StartedNetworkPlan {
  return { ok: true, router: 'sequential', members: ['agent_a', 'agent_b'], maxHops: 10, supervisorModel: null, ...changes };
}

export interface NetworkBehaviour {
  plan(runId: string): NetworkPlan;
  /** The supervisor's choice at each of its steps. */
  supervise(call: { runId: string; stepIndex: number; model: string }): SupervisorChoice;
  /** A member's model reply at a step of its hop: tool calls (a `handoff` among them), or null for its answer. */
  reply(agentId: string, stepIndex: number): ToolCall[] | null;
}

const defaultBehaviour: NetworkBehaviour = {
  plan: () => networkPlanOf(),
  supervise: () => ({ next: null, reason: 'The task is done.', input: null }),
  reply: () => null,
};

export interface StartedHop {
  runId: string;
  hopIndex: number;
  agentId: string;
  decision: HopDecision;
  input: HopInput;
  childRunId: string;
}

/** The hops the network run started, in order, with the child run of each. */
export function hopsOf(ledger: Ledger, runId: string): StartedHop[] {
  return ledger.inputsOf('startHop', runId) as unknown as StartedHop[];
}

/** The network activities (and the run activities of its hops), answering as `behaviour` says. */
export function networkActivities(ledger: Ledger, behaviour: Partial<NetworkBehaviour> = {}) {
  const network = { ...defaultBehaviour, ...behaviour };
  const memberOf = new Map<string, string>();
  const members = runActivities(ledger, { reply: ({ runId, stepIndex }) => network.reply(memberOf.get(runId)!, stepIndex) });
  return {
    ...members,
    async admitNetworkRun(input: { runId: string }): Promise<'start' | 'wait' | 'gone'> {
      ledger.record('admitNetworkRun', input);
      return 'start';
    },
    async startNetworkRun(input: { runId: string }): Promise<NetworkPlan> {
      ledger.record('startNetworkRun', input);
      return network.plan(input.runId);
    },
    async superviseNext(input: { runId: string; stepIndex: number; model: string }): Promise<SupervisorChoice> {
      ledger.record('superviseNext', input);
      return network.supervise(input);
    },
    async startHop(hop: { runId: string; hopIndex: number; agentId: string; decision: HopDecision; input: HopInput }): Promise<HopStart> {
      const childRunId = `${hop.runId}_hop${hop.hopIndex}`;
      ledger.record('startHop', { ...hop, childRunId });
      memberOf.set(childRunId, hop.agentId);
      return { ok: true, childRunId };
    },
    /** What the hop's child run ended with, as the run activities recorded it. */
    async hopOutcome(input: { childRunId: string }): Promise<HopOutcome> {
      ledger.record('hopOutcome', input);
      const ending = ledger.endingOf(input.childRunId);
      const error: RunError | null = ending.error ?? null;
      return {
        status: ending.status,
        agentId: memberOf.get(input.childRunId)!,
        error,
        handoff: ledger.handoffs.get(input.childRunId) ?? null,
      };
    },
  } satisfies Partial<NetworkActivities> & typeof members;
}
