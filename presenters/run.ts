import type { components } from '../api/generated/openapi.js';
import type { ChatMessage } from '../models/messages.js';
import type { RunRecord, RunSummaryRecord } from '../records/runs.js';
import type { Citation, RunStepRecord, StepPage } from '../records/run-steps.js';
import type { RunEventRecord } from '../records/run-events.js';
import type { RunScoreRecord } from '../records/run-scores.js';
import { unixSeconds } from './time.js';

export type RunObject = components['schemas']['Run'];
export type RunSummaryObject = components['schemas']['RunSummary'];
type RunMessage = components['schemas']['RunMessage'];
type RunStep = components['schemas']['RunStep'];

/** An input message as the API shows it: attachment parts (the model's view of files) are not repeated here. */
function presentMessage(message: ChatMessage): RunMessage | null {
  switch (message.role) {
    case 'system':
      return null;
    case 'user':
      return typeof message.content === 'string' ? { role: 'user', content: message.content } : null;
    case 'assistant':
      return { role: 'assistant', content: message.content, ...(message.tool_calls?.length ? { tool_calls: message.tool_calls } : {}) };
    case 'tool':
      return {
        role: 'tool',
        content: message.content,
        tool_call_id: message.tool_call_id,
        name: message.name,
        is_error: message.is_error ?? false,
      };
  }
}

/**
 * Where a step sits in its run, to the millisecond (the timestamps are whole seconds): from the run's start,
 * and how long it waited after the step before it ended (the first step: after the run started), which is
 * the orchestration's scheduling time. A step begun while the one before still ran (parallel tool calls)
 * waited for nothing.
 */
function timingOf(
  step: RunStepRecord,
  previous: Pick<RunStepRecord, 'completed_at'> | undefined,
  runStart: Date,
): Pick<RunStep, 'offset_ms' | 'queued_ms'> {
  const start = step.started_at.getTime();
  const ready = previous ? previous.completed_at?.getTime() : runStart.getTime();
  return { offset_ms: Math.max(0, start - runStart.getTime()), queued_ms: ready === undefined ? 0 : Math.max(0, start - ready) };
}

/**
 * A step with the message it added, each message in one place only: a model call's reply (its text in
 * `output`, the calls it asked for in `tool_calls`), a tool call's result in `output`.
 */
function presentStep(step: RunStepRecord, previous: Pick<RunStepRecord, 'completed_at'> | undefined, runStart: Date): RunStep {
  const base: RunStep = {
    index: step.index,
    type: step.type,
    status: step.status,
    started_at: unixSeconds(step.started_at),
    completed_at: unixSeconds(step.completed_at),
    duration_ms: step.completed_at ? step.completed_at.getTime() - step.started_at.getTime() : null,
    ...timingOf(step, previous, runStart),
    error: step.error,
    ...(step.payload_expired ? { payload_expired: true } : {}),
  };
  if (step.type === 'model_call') {
    const reply = step.message?.role === 'assistant' ? step.message : null;
    return {
      ...base,
      model: step.model ?? undefined,
      ...(reply ? { output: reply.content } : {}),
      ...(reply?.tool_calls?.length ? { tool_calls: reply.tool_calls } : {}),
      usage: { input_tokens: step.input_tokens, output_tokens: step.output_tokens, cached_tokens: step.cached_tokens },
      cost: step.cost,
      ...(step.price_version ? { price_version: step.price_version } : {}),
    };
  }
  return {
    ...base,
    // Its step runs once the approval is decided: until then, it waits for it.
    ...(step.approval?.status === 'pending' && step.status === 'in_progress' ? { status: 'awaiting_approval' as const } : {}),
    ...(step.approval ? { approval_id: step.approval.id } : {}),
    ...(step.tool_call ? { tool_call: step.tool_call } : {}),
    ...(step.message?.role === 'tool' ? { output: step.message.content } : {}),
    ...(step.citations ? { citations: step.citations } : {}),
    ...(step.remote_task ? { remote_task: step.remote_task } : {}),
    // A remote agent that reported what its task cost: the step's share of the run's usage and cost.
    ...(step.remote_task && Number(step.cost) > 0
      ? { usage: { input_tokens: step.input_tokens, output_tokens: step.output_tokens, cached_tokens: 0 }, cost: step.cost }
      : {}),
    is_error: step.is_error,
    ...(step.replayed_from !== null ? { replayed: true as const } : {}),
  };
}

type RunHop = components['schemas']['RunHop'];

function presentHop(child: RunSummaryRecord, parentStart: Date): RunHop {
  const start = child.started_at ?? child.created_at;
  return {
    index: child.hop_index ?? 0,
    agent_id: child.agent_id ?? '',
    child_run_id: child.id,
    status: child.status,
    decision: child.hop_decision ?? { router: 'sequential', reason: '' },
    usage: { input_tokens: child.input_tokens, output_tokens: child.output_tokens, cached_tokens: child.cached_tokens },
    cost: child.cost,
    started_at: unixSeconds(start),
    completed_at: unixSeconds(child.completed_at),
    offset_ms: Math.max(0, start.getTime() - parentStart.getTime()),
    duration_ms: child.completed_at ? child.completed_at.getTime() - start.getTime() : null,
  };
}

type RunScore = components['schemas']['RunScore'];

export function presentScore(score: RunScoreRecord): RunScore {
  return { scorer: score.scorer, value: score.value, explanation: score.explanation, scored_at: unixSeconds(score.scored_at) };
}

/** The fields a run shows in lists and in full alike: who ran it, how it went, and its totals. */
function presentSummaryFields(run: RunSummaryRecord, children: RunSummaryRecord[], scores: RunScoreRecord[]) {
  const runStart = run.started_at ?? run.created_at;
  return {
    id: run.id,
    object: 'run' as const,
    agent_id: run.agent_id,
    agent_version: run.agent_version,
    network_id: run.network_id,
    network_version: run.network_version,
    parent_run_id: run.parent_run_id,
    status: run.status === 'in_progress' && run.pending_approvals > 0 ? ('requires_action' as const) : run.status,
    model: run.model,
    resolved_model: run.resolved_model,
    routing_reason: run.routing_reason,
    file_ids: run.file_ids,
    previous_run_id: run.previous_run_id,
    thread_id: run.thread_id,
    subject_id: run.subject_id,
    experiment_id: run.experiment_id,
    schedule_id: run.schedule_id,
    step_count: run.step_count,
    hops: children.map((child) => presentHop(child, runStart)),
    usage: { input_tokens: run.input_tokens, output_tokens: run.output_tokens, cached_tokens: run.cached_tokens },
    cost: run.cost,
    max_cost_usd: run.max_cost_usd,
    error: run.error,
    scores: scores.map(presentScore),
    metadata: run.metadata,
    created_at: unixSeconds(run.created_at),
    started_at: unixSeconds(run.started_at),
    completed_at: unixSeconds(run.completed_at),
  };
}

/** A run as lists show it: no conversation, so that a page of runs stays small however large they are. */
export function presentRunSummary(
  run: RunSummaryRecord,
  children: RunSummaryRecord[] = [],
  scores: RunScoreRecord[] = [],
): RunSummaryObject {
  return presentSummaryFields(run, children, scores);
}

/**
 * A run in full: its input and output, the first page of its steps (`steps_has_more` says whether
 * `/v1/runs/{id}/steps` has more), its scores, and a network run's hops (its child runs, in order).
 */
export function presentRun(
  run: RunRecord & { step_count: number },
  steps: StepPage,
  citations: Citation[][],
  children: RunSummaryRecord[] = [],
  scores: RunScoreRecord[] = [],
): RunObject {
  const runStart = run.started_at ?? run.created_at;
  return {
    ...presentSummaryFields(run, children, scores),
    input: run.input.map(presentMessage).filter((m): m is RunMessage => m !== null),
    output: { text: run.output_text, citations: distinctCitations(citations) },
    steps: presentSteps(steps, runStart),
    steps_has_more: steps.hasMore,
  };
}

/** A page of a run's steps, timed from the run's start. */
export function presentSteps(page: StepPage, runStart: Date): RunStep[] {
  return page.steps.map((step, i) => presentStep(step, i === 0 ? page.before : page.steps[i - 1], runStart));
}

/** One event of a run's log as a Server-Sent Events message; `id` is its sequence number. */
export function presentRunEvent(event: RunEventRecord): string {
  // The fields every event has come last, so that no event's own data can stand in for them.
  const data = { ...event.data, run_id: event.run_id, seq: event.seq, type: event.type, created_at: unixSeconds(event.created_at) };
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

export const TERMINAL_RUN_EVENTS = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** The run's own last event (a network run's log also carries its hops' events, tagged with `child_run_id`). */
export function endsRun(event: RunEventRecord): boolean {
  return TERMINAL_RUN_EVENTS.has(event.type) && event.data.child_run_id === undefined;
}

/** Every passage the run's tool calls cited, once each, in the order first cited. */
function distinctCitations(byStep: Citation[][]): Citation[] {
  const seen = new Map<string, Citation>();
  for (const citations of byStep) {
    for (const c of citations) {
      const key = `${c.file_id}\u0000${c.page}\u0000${c.start_ms}`;
      if (!seen.has(key)) seen.set(key, c);
    }
  }
  return [...seen.values()];
}
