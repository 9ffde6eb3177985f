/**
 * A run's I/O: admission, planning, each model call and tool call, and the end of the run. Every
 * activity is safe to run again: a step already completed is returned as recorded, never redone, so a
 * worker that dies mid-run costs at most the call it was making.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { LRUCache } from 'lru-cache';
import type { Db, Queryable } from '../../records/db.js';
import type { BlobStore } from '../../records/blobs/store.js';
import { transaction } from '../../records/db.js';
import { findAgentVersion, type AgentDefinition } from '../../records/agents.js';
import { attachmentsOf } from '../../records/files.js';
import { attachedImage } from './attached-images.js';
import { appendRunEvent } from '../../records/run-events.js';
import {
  admissionOf,
  childrenOf,
  finishRun,
  recordHandoff,
  markRunStarted,
  nextQueuedRun,
  recordPlan,
  recordRouting,
  runAndToolSpecs,
  runById,
  type RunError,
  type RunRecord,
} from '../../records/runs.js';
import { beginStep, completeToolStep, failStep, findStep, recordRemoteTask, type RemoteTask } from '../../records/run-steps.js';
import type { ToolCall, ToolSpec } from '../../models/messages.js';
import type { ModelCatalogue } from '../../models/catalogue.js';
import type { ModelGateway } from '../../models/gateway.js';
import { invokeTool, offeredTools, ToolsTooLargeError, ToolUnavailableError, type ToolContext } from '../../tools/toolbox.js';
import type { ToolDefinition } from '../../tools/definitions.js';
import { definitionOfCall } from '../../tools/guards.js';
import { conversationFor, finalTextOf } from './conversation.js';
import { passGate, type Gate } from './tool-gate.js';
import { chooseModels, readyAttachments, RunRefused } from './planning.js';
import { DeltaBatcher } from './deltas.js';
import { outlastDatabaseOutage } from '../database-outage.js';
import { heartbeat, keepBeating } from '../heartbeats.js';
import { callOutlivingAttempt, endCallsOfCancelledRun, endedCall, joinCallInFlight } from '../calls-in-flight.js';
import { runModelStep } from '../model-step.js';
import { outputAllowance } from '../../models/model-call.js';
import { handoffOf, handoffToolFor } from './handoff.js';
import { messageTokens, nextRunOnThread } from '../../records/threads.js';
import { keepsMemories, rememberedSubject } from '../../records/memories.js';
import { runWorkflowId } from './ids.js';
import { networkRunWorkflowId } from '../networks/ids.js';
import { currentTraceContext, withStoredContext } from '../../tracing/context.js';
import { exportRunSpan, inToolSpan, type EndedRun } from '../../tracing/gen-ai.js';
import type { AgentOverrides } from '../../records/experiments.js';
import { replayedToolSpecs, replayToolCall, type Replayed } from './replay.js';
import type { SlotRefusal } from '../slot-shares.js';

export interface RunActivityDependencies {
  db: Db;
  blobs: BlobStore;
  /** `judgeModel`: AGENTPLANE_JUDGE_MODEL; a run with an answer then asks the judge for a score once it has ended. */
  models: { catalogue: ModelCatalogue; gateway: ModelGateway; judgeModel?: string };
  toolsAllowPrivate: boolean;
  /** The embedding model's folder, if installed: search_context finds passages by meaning as well as words. */
  embeddingModelDir?: string;
  /** Told the project of each run read (ActivityDependencies'). */
  runRead?: (runId: string, projectId: string) => void;
}

export type Admission = 'start' | 'wait' | 'gone';
export type RunPlan = { ok: true; candidates: string[]; reason: string; maxSteps: number } | { ok: false; error: RunError };
/**
 * Admission and, once admitted, the start: what `beginRun` answers. `prepare`: admitted, but the start
 * may take a while (attachments still being extracted, MCP servers to ask for their tools), so it is left
 * to the `startRun` activity.
 */
export type Beginning = { admission: 'wait' | 'gone' | 'prepare' } | { admission: 'start'; plan: RunPlan };
export interface RunEnding {
  /** The agent's next queued run, for the workflow to wake. */
  next: string | null;
  /** The workflow of the thread's next run waiting its turn, for the workflow to wake (an agent's or a network's). */
  threadNext?: string | null;
  /** The run completed on a thread for a subject, with memory on: what the subject stated is to be learned. */
  memory?: boolean;
  /** The run has an answer for the judge to score (a judge is configured). */
  judge?: boolean;
}
/**
 * A tool call's outcome for the workflow: whether it waits for a person's decision, and until when; or, in a
 * replayed run, that the call had no recorded answer, which ends the run.
 */
export interface ToolOutcome extends Partial<SlotRefusal> {
  awaitingApproval?: { approvalId: string; expiresAtMs: number };
  replayMiss?: RunError;
}

/** A tool call past its start: replayed (and done with), or through its gate, to be made or waiting. */
type PreparedCall =
  | { replayed: NonNullable<Replayed> }
  | { replayed?: undefined; run: RunRecord; agent: AgentDefinition; gate: Gate; remoteTask: RemoteTask | null };

export interface ModelReply {
  toolCalls: ToolCall[];
  /** Present when the reply called no tool: it was the run's answer, and the run ended with it. */
  ended?: RunEnding;
}

/**
 * Reads a run and the agent version it runs (a version never changes once written, so each is read once); with
 * `withToolSpecs`, the tools the run offers its model too, in the same read.
 */
function runReader(db: Db, runRead?: (runId: string, projectId: string) => void) {
  const versions = new LRUCache<string, AgentDefinition>({ max: 1_000 });
  return async (runId: string, withToolSpecs = false): Promise<{ run: RunRecord; agent: AgentDefinition; toolSpecs?: ToolSpec[] }> => {
    const read = withToolSpecs ? await runAndToolSpecs(db, runId) : await runById(db, runId).then((run) => run && { run, toolSpecs: null });
    if (!read) throw ApplicationFailure.nonRetryable(`run ${runId} does not exist`, 'run_missing');
    const { run } = read;
    runRead?.(run.id, run.project_id);
    if (!run.agent_id || !run.agent_version) throw ApplicationFailure.nonRetryable(`run ${runId} is not an agent run`, 'not_an_agent_run');
    const key = `${run.agent_id}@${run.agent_version}`;
    const agent = versions.get(key) ?? (await findAgentVersion(db, run.agent_id, run.agent_version));
    if (!agent)
      throw ApplicationFailure.nonRetryable(`agent ${run.agent_id} version ${run.agent_version} does not exist`, 'agent_version_missing');
    versions.set(key, agent);
    return { run, agent: withOverrides(agent, run.agent_overrides), toolSpecs: (read.toolSpecs ?? undefined) as ToolSpec[] | undefined };
  };
}

/** An experiment's changes to the version it runs, for its runs only. */
function withOverrides(agent: AgentDefinition, overrides: AgentOverrides | null): AgentDefinition {
  if (!overrides) return agent;
  return {
    ...agent,
    model: overrides.model ?? agent.model,
    instructions: overrides.instructions ?? agent.instructions,
    model_settings: (overrides.model_settings as AgentDefinition['model_settings'] | undefined) ?? agent.model_settings,
  };
}

export const createRunActivities = ({ db, blobs, models, toolsAllowPrivate, embeddingModelDir, runRead }: RunActivityDependencies) => {
  const runAndAgent = runReader(db, runRead);
  const toolContext = async (run: RunRecord, agent: AgentDefinition, signal: AbortSignal): Promise<ToolContext> => ({
    signal,
    allowPrivate: toolsAllowPrivate,
    db,
    projectId: run.project_id,
    runId: run.id,
    attachmentIds: run.file_ids,
    embeddingModelDir,
    memorySubject: await rememberedSubject(db, run, agent.memory.enabled),
  });

  /**
   * Whether the run may start now: `enqueue` runs wait for every earlier run of the agent to end. A
   * network's hop starts when its network run says so.
   */
  const admit = async (run: RunRecord, agent: AgentDefinition): Promise<Admission> => {
    return admissionOf(db, run, agent.concurrency);
  };

  /** Starts the run: attachments ready, model chosen, tools listed. A refusal ends the run as failed. */
  const start = async (run: RunRecord, agent: AgentDefinition): Promise<RunPlan> => {
    const beat = keepBeating();
    try {
      // Whether the project has context to search is read with the start: one statement fewer for the tools offered.
      const { hasContext } = await markRunStarted(db, run.id);
      const attachments = await readyAttachments(db, run, heartbeat, Context.current().cancellationSignal);
      // A model the API found on a local server since this worker last listed it.
      if (run.model !== 'auto' && !models.catalogue.find(run.model)) await models.catalogue.refresh().catch(() => {});
      const choice = chooseModels(models.catalogue, run, agent, attachments);
      const handoff = await handoffToolFor(db, run);
      const context = { ...(await toolContext(run, agent, Context.current().cancellationSignal)), hasContext };
      const specs = [
        // A replayed run asks no tool server for its tools: the source run's list stands in for it.
        ...(run.replay_item_id
          ? await replayedToolSpecs(db, run, agent, context)
          : await offeredTools(agent.tools as ToolDefinition[], context)),
        ...(handoff ? [handoff] : []),
      ];
      await recordPlan(db, run.id, { toolSpecs: specs, resolvedModel: choice.candidates[0]!, reason: choice.reason });
      return { ok: true, candidates: choice.candidates, reason: choice.reason, maxSteps: run.max_steps };
    } catch (err) {
      if (err instanceof RunRefused) return { ok: false, error: err.error };
      if (err instanceof ToolsTooLargeError) return { ok: false, error: { code: err.code, message: err.message } };
      if (err instanceof ToolUnavailableError) throw ApplicationFailure.retryable(err.message, 'tool_unavailable');
      throw err;
    } finally {
      beat.stop();
    }
  };

  const judging = (answer: string) => Boolean(models.judgeModel) && answer.trim() !== '';

  /** The run to wake when `run` ends: its agent's (or network's) next queued run; none for a network's hop. */
  const nextAfter = (run: RunRecord) => (run.parent_run_id ? Promise.resolve(null) : nextQueuedRun(db, run.agent_id ?? run.network_id!));

  /** The workflow of the run to wake on `run`'s thread when it ends, if any. */
  const threadNextAfter = async (run: RunRecord) => {
    const next = run.thread_id && !run.parent_run_id ? await nextRunOnThread(db, run.thread_id) : null;
    return next ? (next.network ? networkRunWorkflowId(next.id) : runWorkflowId(next.id)) : null;
  };

  /** Ends the run once, in `tx`, with its outbox event; the ended run, or null if it had already ended. */
  const endIn = (
    tx: Queryable,
    run: RunRecord,
    outcome: { status: 'completed' | 'failed' | 'cancelled'; outputText: string; error?: RunError },
  ) =>
    finishRun(
      tx,
      run.id,
      { status: outcome.status, outputText: outcome.outputText, error: outcome.error ?? null },
      // The event's webhook deliveries are spans of the run's.
      withStoredContext(run.trace_context, currentTraceContext),
    );

  /**
   * A network run answers with its last completed hop's output; one whose supervisor finished before any hop, with
   * the supervisor's own answer (a task that needed no member: a greeting, a question it could answer itself).
   */
  const networkOutputOf = async (runId: string): Promise<string> => {
    const hops = await childrenOf(db, runId);
    if (hops.length === 0) return finalTextOf(db, runId);
    return hops.filter((c) => c.status === 'completed').at(-1)?.output_text ?? '';
  };

  /** Ends the run (once) with its output, steps left running cancelled; answers the agent's next queued run, for the workflow to wake. */
  const end = async (runId: string, status: 'completed' | 'failed' | 'cancelled', error?: RunError): Promise<RunEnding> => {
    const run = await runById(db, runId);
    if (!run) return { next: null };
    const outputText = run.network_id ? await networkOutputOf(runId) : await finalTextOf(db, runId);
    const ended = await transaction(db, async (tx) => {
      await tx.query(`UPDATE run_steps SET status = 'cancelled', completed_at = now() WHERE run_id = $1 AND status = 'in_progress'`, [
        runId,
      ]);
      return endIn(tx, run, { status, outputText, error });
    });
    // Only once the end is committed; an attempt retried after this commit finds the run ended and exports nothing.
    if (ended) exportRunSpan(ended);
    // Its calls still in flight on this worker end now, not at their next heartbeat.
    if (status === 'cancelled') endCallsOfCancelledRun(runId);
    return {
      next: await nextAfter(run),
      threadNext: await threadNextAfter(run),
      memory: status === 'completed' && (await keepsMemories(db, run)),
      judge: judging(outputText),
    };
  };

  return {
    /**
     * The start beginRun leaves to an activity of its own, once the run is admitted. `waitsForSlot`: the workflow
     * waits out a refusal of the project's share of the worker's slots (`slot-shares.ts`).
     */
    async startRun({ runId }: { runId: string; waitsForSlot?: boolean }): Promise<RunPlan | SlotRefusal> {
      const { run, agent } = await runAndAgent(runId);
      return start(run, agent);
    },

    /**
     * Admission, then (once admitted) the start, in one go, when the start is quick. A slow one is left
     * to startRun: run in the workflow's task, it would hold that task, and a cancellation with it.
     */
    async beginRun({ runId }: { runId: string }): Promise<Beginning> {
      const { run, agent } = await runAndAgent(runId);
      const admission = await admit(run, agent);
      if (admission !== 'start') return { admission };
      // A replayed run offers the tools its source run was offered: it asks no server.
      const asksServers =
        !run.replay_item_id && (agent.tools as ToolDefinition[]).some((tool) => tool.type === 'mcp' || tool.type === 'a2a');
      const extracting = (await attachmentsOf(db, run.project_id, run.file_ids)).some((file) => file.status === 'processing');
      return asksServers || extracting ? { admission: 'prepare' } : { admission, plan: await start(run, agent) };
    },

    /** One model call, streamed into the run's event log; its reply and usage are recorded once. */
    async callModel({ runId, stepIndex, model }: { runId: string; stepIndex: number; model: string }): Promise<ModelReply> {
      // The call's heartbeats are runModelStep's, every HEARTBEAT_MS: a reply sooner than that costs Temporal none.
      const deltas = new DeltaBatcher(async (text) => {
        await appendRunEvent(db, runId, 'output_text.delta', { step: stepIndex, delta: text });
      });
      // The run the reply ended, as the last transaction that recorded it left it: its span leaves after that commit.
      let endedByReply: EndedRun | null = null;
      return runModelStep(
        { db, models },
        {
          runId,
          stepIndex,
          model,
          // The tools the run offers, read with it: what its start recorded (recordPlan).
          read: () => runAndAgent(runId, true),
          call: async ({ run, agent, toolSpecs }, chosen, steps) => {
            const tools = toolSpecs ?? [];
            const messages = await conversationFor(db, run, agent, steps, {
              vision: chosen.capabilities.vision,
              window: chosen.capabilities.context_window,
              outputAllowance: outputAllowance(chosen, agent.model_settings),
              toolTokens: messageTokens(JSON.stringify(tools)),
            });
            return {
              messages,
              tools,
              settings: agent.model_settings,
              loadImage: (fileId) => attachedImage(db, blobs, fileId),
              onTextDelta: (text) => deltas.add(text),
            };
          },
          flush: () => deltas.flush(),
          traceOf: ({ run }) => run.trace_context,
          // A reply that calls no tool is the run's answer: the run ends with it, in the same transaction.
          recordWith: async (tx, { run }, reply) => {
            endedByReply = reply.tool_calls?.length ? null : await endIn(tx, run, { status: 'completed', outputText: reply.content });
          },
          answer: async ({ run }, reply, recorded) => {
            if (endedByReply) exportRunSpan(endedByReply);
            endedByReply = null;
            const toolCalls = reply.tool_calls ?? [];
            if (toolCalls.length > 0) return { toolCalls };
            return {
              toolCalls,
              ended: recorded
                ? await end(runId, 'completed')
                : {
                    next: await nextAfter(run),
                    threadNext: await threadNextAfter(run),
                    memory: await keepsMemories(db, run),
                    judge: judging(reply.content),
                  },
            };
          },
        },
      );
    },

    /**
     * One tool call, past the tool's policy and approval (tool-gate.ts); its result (an error included) is recorded
     * for the model to read. A call waiting for a person's decision returns at once, saying until when it waits:
     * the workflow calls again once the decision comes, or its time is up. `waitsForSlot`: the workflow waits out
     * a refusal of the project's share of the worker's slots (`slot-shares.ts`).
     */
    async callTool({
      runId,
      stepIndex,
      toolCall,
    }: {
      runId: string;
      stepIndex: number;
      toolCall: ToolCall;
      waitsForSlot?: boolean;
    }): Promise<ToolOutcome> {
      const context = Context.current();
      const key = `tool:${runId}:${stepIndex}`;
      const beat = keepBeating();
      let callSignal: AbortSignal | undefined;
      try {
        // An earlier attempt's call still in flight on this worker is waited for: a tool is called once per step.
        await joinCallInFlight(context, runId, key);
        const call = await outlastDatabaseOutage(context, async (): Promise<PreparedCall | null> => {
          const done = await findStep(db, runId, stepIndex);
          if (done?.status === 'completed') return null;
          const { run, agent } = await runAndAgent(runId);
          // A replayed call is answered before any gate or request: nothing is sent, so nothing needs approving.
          const replayed = await replayToolCall(db, run, agent, stepIndex, toolCall);
          if (replayed) return { replayed };
          const gate = await transaction(db, (tx) => passGate(tx, run, agent, stepIndex, toolCall));
          return { run, agent, gate, remoteTask: done?.remote_task ?? null };
        });
        if (!call) return {};
        if (call.replayed) return 'miss' in call.replayed ? { replayMiss: call.replayed.miss } : {};
        if ('awaiting' in call.gate) return { awaitingApproval: call.gate.awaiting };
        if (!('go' in call.gate)) return {};
        const approved = call.gate.go;
        await callOutlivingAttempt(context, runId, key, async (signal) => {
          callSignal = signal;
          const definition = definitionOfCall(call.agent.tools as ToolDefinition[], approved.name);
          const traced = { name: approved.name, callId: approved.id, type: definition?.type ?? 'builtin', arguments: approved.arguments };
          // One key per call, the same for each attempt at it. The tool's own requests carry the span.
          const result = await inToolSpan(call.run.trace_context, traced, async (done) => {
            const result = await invokeTool(call.agent.tools as ToolDefinition[], approved, {
              ...(await toolContext(call.run, call.agent, signal)),
              idempotencyKey: `${runId}-${stepIndex}`,
              // A remote agent's task an earlier attempt started is followed, never started again.
              remoteTask: {
                previous: call.remoteTask,
                remember: (task) => outlastDatabaseOutage(context, () => recordRemoteTask(db, runId, stepIndex, task), signal),
              },
            });
            done(result);
            return result;
          });
          await outlastDatabaseOutage(
            context,
            () =>
              transaction(db, (tx) =>
                completeToolStep(
                  tx,
                  runId,
                  stepIndex,
                  { role: 'tool', tool_call_id: toolCall.id, name: toolCall.name, content: result.content, is_error: result.is_error },
                  result.citations,
                  result.charge,
                ),
              ),
            signal,
          );
        });
        return {};
      } catch (err) {
        const ended = endedCall(context, callSignal);
        if (ended) throw ended;
        if (err instanceof ToolUnavailableError)
          throw ApplicationFailure.create({ message: err.message, type: 'tool_unavailable', nextRetryDelay: err.retryAfterMs });
        throw err;
      } finally {
        beat.stop();
      }
    },

    /**
     * A member of a handoff network calling `handoff`: recorded as the tool's step and on the run, which
     * then ends. False when the call names no teammate (it is then run as any tool call, and fails).
     */
    async handOff({ runId, stepIndex, toolCall }: { runId: string; stepIndex: number; toolCall: ToolCall }): Promise<boolean> {
      const run = await runById(db, runId);
      if (!run) return false;
      const handoff = await handoffOf(db, run, toolCall);
      if (!handoff) return false;
      await transaction(db, async (tx) => {
        await beginStep(tx, runId, stepIndex, { type: 'tool_call', toolCall });
        await completeToolStep(tx, runId, stepIndex, {
          role: 'tool',
          tool_call_id: toolCall.id,
          name: toolCall.name,
          content: `Handed over to ${handoff.to}.`,
        });
        await recordHandoff(tx, runId, handoff);
      });
      return true;
    },

    /** A tool that stayed unavailable through every retry: the model is told, and the run goes on. */
    async recordToolFailure({
      runId,
      stepIndex,
      toolCall,
      message,
    }: {
      runId: string;
      stepIndex: number;
      toolCall: ToolCall;
      message: string;
    }): Promise<void> {
      await transaction(db, async (tx) => {
        // Only a step no attempt got as far as starting is started here: giving up is not another attempt.
        if (!(await findStep(tx, runId, stepIndex))) await beginStep(tx, runId, stepIndex, { type: 'tool_call', toolCall });
        await completeToolStep(tx, runId, stepIndex, {
          role: 'tool',
          tool_call_id: toolCall.id,
          name: toolCall.name,
          content: message,
          is_error: true,
        });
      });
    },

    /** A model call that ended without a reply: the step is marked failed with why. */
    async abandonStep({ runId, stepIndex, error }: { runId: string; stepIndex: number; error: RunError }): Promise<void> {
      await transaction(db, (tx) => failStep(tx, runId, stepIndex, 'failed', error));
    },

    /** `auto` moving to its next candidate: the run says which model now answers, and why. */
    async noteFallback({ runId, model, reason }: { runId: string; model: string; reason: string }): Promise<void> {
      await transaction(db, async (tx) => {
        await recordRouting(tx, runId, model, reason);
        await appendRunEvent(tx, runId, 'run.model_fallback', { model, routing_reason: reason });
      });
    },

    /**
     * Ends the run (once) with its output, marks steps left running as cancelled, records the outbox
     * event; answers the agent's next queued run, which the workflow then wakes.
     */
    async endRun({
      runId,
      status,
      error,
    }: {
      runId: string;
      status: 'completed' | 'failed' | 'cancelled';
      error?: RunError;
    }): Promise<RunEnding> {
      return end(runId, status, error);
    },
  };
};

export type RunActivities = ReturnType<typeof createRunActivities>;
