/**
 * A network run's I/O: its start (the supervisor's model chosen), each hop started as a child run (once),
 * the supervisor's choices (model calls recorded on the network run), and what each hop ended with.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import { transaction } from '../../records/db.js';
import { findAgent, type AgentRecord } from '../../records/agents.js';
import { findNetworkVersion, type NetworkDefinition } from '../../records/networks.js';
import {
  admissionOf,
  childrenOf,
  insertChildRun,
  markRunStarted,
  recordRouting,
  runById,
  type HopDecision,
  type InputMessage,
  type RunError,
  type RunRecord,
} from '../../records/runs.js';
import type { ModelCatalogue } from '../../models/catalogue.js';
import type { ModelGateway } from '../../models/gateway.js';
import { routeAuto } from '../../models/routing.js';
import { choiceOf, routeToolSpec, supervisorMessages, type SupervisorChoice } from './supervisor.js';
import { runModelStep } from '../model-step.js';

export interface NetworkActivityDependencies {
  db: Db;
  models: { catalogue: ModelCatalogue; gateway: ModelGateway };
}

export type NetworkPlan =
  | { ok: true; router: NetworkDefinition['router']['type']; members: string[]; maxHops: number; supervisorModel: string | null }
  | { ok: false; error: RunError };

/** Where a hop's input comes from; only ids and short text pass through the workflow. */
export type HopInput = { from: 'network' } | { from: 'previous_hop' } | { from: 'supervisor'; text: string } | { from: 'handoff' };

export type HopStart = { ok: true; childRunId: string } | { ok: false; error: RunError };

export interface HopOutcome {
  status: RunRecord['status'];
  agentId: string;
  error: RunError | null;
  handoff: RunRecord['handoff'];
}

async function networkRun(db: Db, runId: string): Promise<{ run: RunRecord; network: NetworkDefinition }> {
  const run = await runById(db, runId);
  if (!run?.network_id || !run.network_version)
    throw ApplicationFailure.nonRetryable(`run ${runId} is not a network run`, 'not_a_network_run');
  const network = await findNetworkVersion(db, run.network_id, run.network_version);
  if (!network)
    throw ApplicationFailure.nonRetryable(
      `network ${run.network_id} version ${run.network_version} does not exist`,
      'network_version_missing',
    );
  return { run, network };
}

/** The members still live, in the network's order; deleted ones are missing. */
async function liveMembers(db: Db, run: RunRecord, network: NetworkDefinition): Promise<AgentRecord[]> {
  const found = await Promise.all(network.members.map((id) => findAgent(db, run.project_id, id)));
  return found.filter((m): m is AgentRecord => m !== null);
}

/** A hop's input, from the network run, the supervisor, or the hop before it (`previous`). */
function hopInput(run: RunRecord, previous: RunRecord | undefined, input: HopInput): InputMessage[] {
  if (input.from === 'network') return run.input;
  if (input.from === 'supervisor') return [{ role: 'user', content: input.text }];
  if (input.from === 'previous_hop') return [{ role: 'user', content: previous?.output_text || '(the previous member gave no output)' }];
  const handoff = previous?.handoff;
  const note = `Handed over by ${previous?.agent_id ?? 'the previous member'}: ${handoff?.reason ?? ''}${handoff?.message ? `\n${handoff.message}` : ''}`;
  return [...run.input, { role: 'user', content: note }];
}

export const createNetworkActivities = ({ db, models }: NetworkActivityDependencies) => ({
  /** Whether the network run may start now: `enqueue` runs wait for every earlier run of the network to end. */
  async admitNetworkRun({ runId }: { runId: string }): Promise<'start' | 'wait' | 'gone'> {
    const { run, network } = await networkRun(db, runId);
    return admissionOf(db, run, network.concurrency);
  },

  async startNetworkRun({ runId }: { runId: string }): Promise<NetworkPlan> {
    const { run, network } = await networkRun(db, runId);
    await transaction(db, (tx) => markRunStarted(tx, runId));
    const plan = {
      ok: true as const,
      router: network.router.type,
      members: network.members,
      maxHops: network.max_hops,
      supervisorModel: null as string | null,
    };
    if (network.router.type !== 'supervisor') return plan;

    const routerAgent = network.router.agent_id ? await findAgent(db, run.project_id, network.router.agent_id) : null;
    if (network.router.agent_id && !routerAgent) {
      return { ok: false, error: { code: 'member_deleted', message: `The supervisor agent ${network.router.agent_id} was deleted.` } };
    }
    const asked = run.model !== 'none' ? run.model : (routerAgent?.model ?? 'auto');
    if (asked === 'auto') {
      const routed = routeAuto(models.catalogue, {
        tools: true,
        vision: false,
        input_tokens: Math.ceil(JSON.stringify(run.input).length / 4) + 1_000,
      });
      if (routed.candidates.length === 0) return { ok: false, error: { code: 'no_model_available', message: routed.reason } };
      await transaction(db, (tx) => recordRouting(tx, runId, routed.candidates[0]!, `supervisor ${routed.reason}`));
      return { ...plan, supervisorModel: routed.candidates[0]! };
    }
    const model = models.catalogue.find(asked);
    if (!model)
      return { ok: false, error: { code: 'model_not_found', message: `The supervisor's model ${asked} is not in the catalogue.` } };
    if (!models.catalogue.configured(model.provider)) {
      return {
        ok: false,
        error: {
          code: 'provider_not_configured',
          message: `No ${model.provider} provider is configured for ${model.id}: set ${models.catalogue.missingSetting(model.provider)}.`,
        },
      };
    }
    await transaction(db, (tx) =>
      recordRouting(tx, runId, model.id, `supervisor: ${model.id}, named by the ${routerAgent ? 'router agent' : 'network'}.`),
    );
    return { ...plan, supervisorModel: model.id };
  },

  /** The supervisor's next choice: one model call, recorded on the network run as its step `stepIndex`. */
  async superviseNext({ runId, stepIndex, model }: { runId: string; stepIndex: number; model: string }): Promise<SupervisorChoice> {
    return runModelStep(
      { db, models },
      {
        runId,
        stepIndex,
        model,
        read: async () => {
          const { run, network } = await networkRun(db, runId);
          return { run, network, members: await liveMembers(db, run, network) };
        },
        call: async ({ run, network, members }) => {
          const routerAgent = network.router.agent_id ? await findAgent(db, run.project_id, network.router.agent_id) : null;
          const instructions = routerAgent?.instructions ?? network.router.instructions ?? '';
          const hops = (await childrenOf(db, runId)).filter((c) => c.status === 'completed');
          return {
            messages: supervisorMessages(instructions, members, run, hops),
            tools: [routeToolSpec(members)],
            settings: routerAgent?.model_settings ?? {},
          };
        },
        answer: async ({ members }, reply) => choiceOf(reply, members),
        traceOf: ({ run }) => run.trace_context,
      },
    );
  },

  /**
   * Creates hop `hopIndex` as a child run of `agentId` (once: a retry finds the same child). A member
   * deleted since the network was defined ends the network run instead.
   */
  async startHop(hop: { runId: string; hopIndex: number; agentId: string; decision: HopDecision; input: HopInput }): Promise<HopStart> {
    const [{ run }, hops] = await Promise.all([networkRun(db, hop.runId), childrenOf(db, hop.runId)]);
    const existing = hops.find((c) => c.hop_index === hop.hopIndex);
    if (existing) return { ok: true, childRunId: existing.id };
    const agent = await findAgent(db, run.project_id, hop.agentId);
    if (!agent)
      return { ok: false, error: { code: 'member_deleted', message: `Member agent ${hop.agentId} was deleted while the network ran.` } };
    const input = hopInput(
      run,
      hops.find((c) => c.hop_index === hop.hopIndex - 1),
      hop.input,
    );
    const child = await transaction(db, (tx) =>
      insertChildRun(tx, run, {
        index: hop.hopIndex,
        agentId: agent.id,
        agentVersion: agent.version,
        maxSteps: agent.max_steps,
        maxCostUsd: agent.max_cost_usd,
        model: agent.model,
        input,
        decision: hop.decision,
      }),
    );
    return { ok: true, childRunId: child.id };
  },

  async hopOutcome({ childRunId }: { childRunId: string }): Promise<HopOutcome> {
    const child = await runById(db, childRunId);
    if (!child) throw ApplicationFailure.nonRetryable(`hop run ${childRunId} does not exist`, 'run_missing');
    return { status: child.status, agentId: child.agent_id ?? '', error: child.error, handoff: child.handoff };
  },
});

export type NetworkActivities = ReturnType<typeof createNetworkActivities>;
