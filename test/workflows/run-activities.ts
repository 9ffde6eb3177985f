/**
 * Stand-ins for the run workflow's activities (workflows/runs/activities.ts), all in this one place: an
 * agent whose runs start at once with one model, whose model answers at once, and a ledger of what the
 * workflow asked for. A test replaces the answers it is about.
 */
import { Context } from '@temporalio/activity';
import type { Beginning, ModelReply, ToolOutcome, RunActivities, RunEnding, RunPlan } from '../../workflows/runs/activities.js';
import type { RunError } from '../../records/runs.js';
import type { ToolCall } from '../../models/messages.js';

export type RunStatus = 'completed' | 'failed' | 'cancelled';

/** What the workflow did, in order, as the activities saw it. */
export class Ledger {
  readonly calls: { activity: string; input: Record<string, unknown> }[] = [];
  /** How each run ended: by `endRun`, or by a model reply that was the run's answer. */
  readonly endings = new Map<string, { status: RunStatus; error?: RunError }>();
  /** Where each run that handed its task over passed it, and why (the `handoff` tool's arguments). */
  readonly handoffs = new Map<string, { to: string; reason: string; message: string }>();

  record(activity: string, input: object): void {
    this.calls.push({ activity, input: { ...input } });
  }

  inputsOf(activity: string, runId?: string): Record<string, unknown>[] {
    return this.calls
      .filter((call) => call.activity === activity && (runId === undefined || call.input.runId === runId))
      .map((call) => call.input);
  }

  endingOf(runId: string): { status: RunStatus; error?: RunError } {
    const ending = this.endings.get(runId);
    if (!ending) throw new Error(`run ${runId} has not ended`);
    return ending;
  }
}

export interface AgentBehaviour {
  /** What admission and start answer for a run, each time the workflow asks. */
  begin(runId: string): Beginning | Promise<Beginning>;
  /** The model's reply to a step: tool calls, or null for a final answer; a throw is a failed call. */
  reply(call: { runId: string; stepIndex: number; model: string }): ToolCall[] | null | Promise<ToolCall[] | null>;
  /** What ending a run answers (its agent's next queued run). */
  ending(runId: string): RunEnding;
}

export type StartedPlan = Extract<RunPlan, { ok: true }>;

/** The plan of a run whose agent names echo-1, with `changes`. */
export function planOf(changes: Partial<StartedPlan> = {}): StartedPlan {
  return { ok: true, candidates: ['echo-1'], reason: 'The agent names echo-1.', maxSteps: 10, ...changes };
}

export const defaultBehaviour: AgentBehaviour = {
  begin: () => ({ admission: 'start', plan: planOf() }),
  reply: () => null,
  ending: () => ({ next: null }),
};

export function toolCall(name: string, args: object = {}): ToolCall {
  return { id: `call-${name}`, name, arguments: JSON.stringify(args) };
}

let callsUntilCancelled = 0;

/** How many calls of `untilCancelled` are still going (each holds the test server's clock while it runs). */
export const callsStillGoing = () => callsUntilCancelled;

/** A model call that lasts until it is cancelled, heartbeating as the real one does. */
export async function untilCancelled(): Promise<never> {
  callsUntilCancelled++;
  try {
    for (;;) {
      Context.current().heartbeat();
      await Context.current().sleep(200);
    }
  } finally {
    callsUntilCancelled--;
  }
}

/** The run activities, answering as `behaviour` says and writing to `ledger`. */
export function runActivities(ledger: Ledger, behaviour: Partial<AgentBehaviour> = {}) {
  const agent = { ...defaultBehaviour, ...behaviour };
  const end = (runId: string, status: RunStatus, error?: RunError): RunEnding => {
    if (!ledger.endings.has(runId)) ledger.endings.set(runId, error ? { status, error } : { status });
    return agent.ending(runId);
  };
  return {
    async beginRun(input: { runId: string }): Promise<Beginning> {
      ledger.record('beginRun', input);
      return agent.begin(input.runId);
    },
    async callModel(input: { runId: string; stepIndex: number; model: string }): Promise<ModelReply> {
      ledger.record('callModel', input);
      const toolCalls = await agent.reply(input);
      // The real activity ends the run when the reply is its answer.
      return toolCalls ? { toolCalls } : { toolCalls: [], ended: end(input.runId, 'completed') };
    },
    async callTool(input: { runId: string; stepIndex: number; toolCall: ToolCall }): Promise<ToolOutcome> {
      ledger.record('callTool', input);
      return {};
    },
    async handOff(input: { runId: string; stepIndex: number; toolCall: ToolCall }): Promise<boolean> {
      ledger.record('handOff', input);
      const { to, reason, message = '' } = JSON.parse(input.toolCall.arguments) as { to: string; reason: string; message?: string };
      ledger.handoffs.set(input.runId, { to, reason, message });
      return true;
    },
    async recordToolFailure(input: { runId: string; stepIndex: number; toolCall: ToolCall; message: string }): Promise<void> {
      ledger.record('recordToolFailure', input);
    },
    async abandonStep(input: { runId: string; stepIndex: number; error: RunError }): Promise<void> {
      ledger.record('abandonStep', input);
    },
    async noteFallback(input: { runId: string; model: string; reason: string }): Promise<void> {
      ledger.record('noteFallback', input);
    },
    async endRun(input: { runId: string; status: RunStatus; error?: RunError }): Promise<RunEnding> {
      ledger.record('endRun', input);
      return end(input.runId, input.status, input.error);
    },
  } satisfies Partial<RunActivities>;
}
