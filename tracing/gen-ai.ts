/**
 * The spans of an agent's work, named and attributed by the OpenTelemetry semantic conventions for generative AI:
 * `invoke_agent {agent}` for a run (a network's hop is a run of its own, a child of the network run's),
 * `chat {model}` for a model call, `execute_tool {tool}` for a tool call. The cost goes in `agentplane.cost.usd`;
 * quality scores are `gen_ai.evaluation.result` events. Prompts and outputs only with the conventions' opt-in.
 */
import { SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import {
  ATTR_GEN_AI_AGENT_ID,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_EVALUATION_EXPLANATION,
  ATTR_GEN_AI_EVALUATION_NAME,
  ATTR_GEN_AI_EVALUATION_SCORE_VALUE,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  EVENT_GEN_AI_EVALUATION_RESULT,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
} from './semantic-conventions.js';
import { chooseNextIds } from './chosen-ids.js';
import { capturesContent, contextOf, inSpan, tracingOn, TRACER_NAME, type StoredTraceContext } from './context.js';

export const ATTR_COST_USD = 'agentplane.cost.usd';
export const ATTR_RUN_ID = 'agentplane.run.id';

/** A run as its span tells it, read when it ends. */
export interface EndedRun {
  id: string;
  /** Null when tracing was off where the run was created: it has no span. */
  trace_context: StoredTraceContext | null;
  status: 'completed' | 'failed' | 'cancelled';
  agent_id: string | null;
  network_id: string | null;
  /** The agent's (or network's) name. */
  name: string | null;
  parent_run_id: string | null;
  hop_index: number | null;
  thread_id: string | null;
  model: string;
  resolved_model: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost: string;
  input: unknown;
  output_text: string | null;
  error: { code: string; message: string } | null;
  created_at: Date;
  completed_at: Date;
  scores: { scorer: string; value: number; explanation: string }[];
}

/**
 * Exports the run's `invoke_agent` span, with the span id its children were given from the run's creation on and
 * the run's real start: it lasts across activities and workers, so no one process holds it open. Called once the
 * transaction that ended the run has committed, so that a span only ever tells of a run's durable end.
 */
export function exportRunSpan(run: EndedRun): void {
  const stored = run.trace_context;
  if (!tracingOn() || !stored) return;
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
    [ATTR_GEN_AI_AGENT_ID]: run.agent_id ?? run.network_id ?? undefined,
    [ATTR_GEN_AI_AGENT_NAME]: run.name ?? undefined,
    [ATTR_GEN_AI_CONVERSATION_ID]: run.thread_id ?? undefined,
    [ATTR_GEN_AI_REQUEST_MODEL]: run.network_id ? undefined : run.model,
    [ATTR_GEN_AI_RESPONSE_MODEL]: run.resolved_model ?? undefined,
    [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: run.input_tokens,
    [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: run.output_tokens,
    [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: run.cached_tokens,
    [ATTR_COST_USD]: Number(run.cost),
    [ATTR_RUN_ID]: run.id,
    'agentplane.run.status': run.status,
    'agentplane.run.parent_id': run.parent_run_id ?? undefined,
    'agentplane.hop.index': run.hop_index ?? undefined,
  };
  if (capturesContent()) {
    attributes[ATTR_GEN_AI_INPUT_MESSAGES] = JSON.stringify(run.input);
    if (run.output_text)
      attributes[ATTR_GEN_AI_OUTPUT_MESSAGES] = JSON.stringify([
        { role: 'assistant', parts: [{ type: 'text', content: run.output_text }] },
      ]);
  }
  const parent = stored.parent_span_id ? contextOf(stored, stored.parent_span_id) : undefined;
  chooseNextIds({ traceId: stored.trace_id, spanId: stored.span_id });
  const span = trace
    .getTracer(TRACER_NAME)
    .startSpan(
      `${GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT} ${run.name ?? run.id}`,
      { kind: SpanKind.INTERNAL, attributes, startTime: run.created_at, root: !parent },
      parent,
    );
  for (const score of run.scores) addEvaluation(span, score, run.completed_at);
  if (run.status === 'failed') {
    span.setStatus({ code: SpanStatusCode.ERROR, message: run.error?.message });
    span.setAttribute('error.type', run.error?.code ?? 'failed');
  }
  span.end(run.completed_at);
}

/** A quality score as the conventions' evaluation event. */
export function addEvaluation(span: Span, score: { scorer: string; value: number; explanation: string }, at?: Date): void {
  span.addEvent(
    EVENT_GEN_AI_EVALUATION_RESULT,
    {
      [ATTR_GEN_AI_EVALUATION_NAME]: score.scorer,
      [ATTR_GEN_AI_EVALUATION_SCORE_VALUE]: score.value,
      ...(capturesContent() ? { [ATTR_GEN_AI_EVALUATION_EXPLANATION]: score.explanation } : {}),
    },
    at,
  );
}

export interface ChatCall {
  provider: string;
  /** The name the provider knows the model by. */
  model: string;
  messages: unknown;
}

export interface ChatReply {
  model?: string;
  finishReason?: string;
  content: unknown;
  usage?: { input_tokens: number; output_tokens: number; cached_tokens?: number };
  costUsd?: number;
}

/** A model call, as a `chat` span child of its run's span. */
export function inChatSpan<T>(
  run: StoredTraceContext | null,
  call: ChatCall,
  fn: (done: (reply: ChatReply) => void) => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return fn(() => {});
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
    [ATTR_GEN_AI_PROVIDER_NAME]: call.provider,
    [ATTR_GEN_AI_REQUEST_MODEL]: call.model,
  };
  if (capturesContent()) attributes[ATTR_GEN_AI_INPUT_MESSAGES] = JSON.stringify(call.messages);
  return inSpan(
    `${GEN_AI_OPERATION_NAME_VALUE_CHAT} ${call.model}`,
    { kind: SpanKind.CLIENT, attributes, parent: contextOf(run) },
    (span) =>
      fn((reply) => {
        span?.setAttributes({
          [ATTR_GEN_AI_RESPONSE_MODEL]: reply.model ?? call.model,
          [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: reply.finishReason ? [reply.finishReason] : undefined,
          [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: reply.usage?.input_tokens,
          [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: reply.usage?.output_tokens,
          [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: reply.usage?.cached_tokens,
          [ATTR_COST_USD]: reply.costUsd,
          ...(capturesContent() ? { [ATTR_GEN_AI_OUTPUT_MESSAGES]: JSON.stringify(reply.content) } : {}),
        });
      }),
  );
}

export interface ToolCallSpan {
  name: string;
  callId: string;
  /** The tool's kind in the agent's definition (http, mcp, …). */
  type: string;
  arguments: string;
}

/** A tool call, as an `execute_tool` span child of its run's span; what the tool does within carries it. */
export function inToolSpan<T>(
  run: StoredTraceContext | null,
  call: ToolCallSpan,
  fn: (done: (result: { content: string; is_error?: boolean }) => void) => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return fn(() => {});
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
    [ATTR_GEN_AI_TOOL_NAME]: call.name,
    [ATTR_GEN_AI_TOOL_CALL_ID]: call.callId,
    [ATTR_GEN_AI_TOOL_TYPE]: call.type === 'mcp' ? 'extension' : 'function',
    'agentplane.tool.kind': call.type,
  };
  if (capturesContent()) attributes[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS] = call.arguments;
  return inSpan(
    `${GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${call.name}`,
    { kind: SpanKind.INTERNAL, attributes, parent: contextOf(run) },
    (span) =>
      fn((result) => {
        if (capturesContent()) span?.setAttribute(ATTR_GEN_AI_TOOL_CALL_RESULT, result.content);
        if (result.is_error) {
          span?.setStatus({ code: SpanStatusCode.ERROR });
          span?.setAttribute('error.type', 'tool_error');
        }
      }),
  );
}
