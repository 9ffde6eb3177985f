/**
 * Trace context that outlives a request: a run, an upload or an event stores the W3C context of the request that
 * made it, and the workers that carry the work on (on any machine, in any attempt) make their spans children of it,
 * so that one request is one trace. Only @opentelemetry/api here, whose calls do nothing until tracing.ts registers
 * the SDK: with tracing off, none of this costs more than a flag test.
 */
import { randomBytes } from 'node:crypto';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type TimeInput,
} from '@opentelemetry/api';

/**
 * A stored trace context. `span_id`: the span the work's own spans are children of. A run's is the run's own
 * `invoke_agent` span, chosen when the run is created and exported when it ends; `parent_span_id` is then the span
 * of the request that created it.
 */
export interface StoredTraceContext {
  trace_id: string;
  span_id: string;
  parent_span_id?: string | null;
  sampled: boolean;
}

let on = false;

/** Set by startTracing when an OTLP endpoint is configured, and unset when it stops. */
export function markTracing(enabled: boolean): void {
  on = enabled;
}

export function tracingOn(): boolean {
  return on;
}

export const TRACER_NAME = 'agentplane';

const newSpanId = () => randomBytes(8).toString('hex');
const newTraceId = () => randomBytes(16).toString('hex');

/** The current span's context, to store with an upload or an event; null when there is none or tracing is off. */
export function currentTraceContext(): StoredTraceContext | null {
  if (!on) return null;
  const span = trace.getSpanContext(context.active());
  if (!span || !trace.isSpanContextValid(span)) return null;
  return { trace_id: span.traceId, span_id: span.spanId, sampled: (span.traceFlags & TraceFlags.SAMPLED) !== 0 };
}

/**
 * The context of a new run: a span id of its own, a child of the current span (the request's), or the root of a
 * trace of its own when there is none. Null when tracing is off.
 */
export function newRunTraceContext(parent?: StoredTraceContext | null): StoredTraceContext | null {
  if (!on) return null;
  const from = parent ?? currentTraceContext();
  return from
    ? { trace_id: from.trace_id, span_id: newSpanId(), parent_span_id: from.span_id, sampled: from.sampled }
    : { trace_id: newTraceId(), span_id: newSpanId(), parent_span_id: null, sampled: true };
}

/** The context whose spans are children of the stored span, as if it had come in a `traceparent` header. */
export function contextOf(stored: StoredTraceContext | null | undefined, spanId = stored?.span_id): Context {
  if (!stored || !spanId) return context.active();
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: stored.trace_id,
    spanId,
    traceFlags: stored.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });
}

/** Runs `fn` with the stored span as the current one (so that what it records and sends carries it). */
export function withStoredContext<T>(stored: StoredTraceContext | null | undefined, fn: () => T): T {
  if (!on || !stored) return fn();
  return context.with(contextOf(stored), fn);
}

/**
 * The headers that carry the current trace to another service (`traceparent`, `tracestate`): outgoing tool
 * calls, MCP requests, A2A calls and webhook deliveries add them. Empty when tracing is off.
 */
export function traceHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  if (on) propagation.inject(context.active(), headers);
  return headers;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; the current context when absent. */
  parent?: Context;
  startTime?: TimeInput;
}

/**
 * Runs `fn` inside a new span, current for what `fn` does; the span ends when `fn` settles, in error if it throws.
 * With tracing off, `fn` runs alone.
 */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span | null) => Promise<T>): Promise<T> {
  if (!on) return fn(null);
  const tracer = trace.getTracer(TRACER_NAME);
  const span = tracer.startSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, startTime: options.startTime },
    options.parent ?? context.active(),
  );
  try {
    return await context.with(trace.setSpan(options.parent ?? context.active(), span), () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

export function failSpan(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  span.setAttribute('error.type', (err as { type?: string; name?: string })?.type ?? (err as Error)?.name ?? 'Error');
}

/**
 * Whether prompts, outputs, tool arguments and results may go into spans: the GenAI conventions' opt-in, off
 * unless the operator turns it on.
 */
export function capturesContent(): boolean {
  return on && process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === 'true';
}

export { SpanKind };
