import assert from 'node:assert/strict';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, RandomIdGenerator, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { choosingIdGenerator } from '../../tracing/chosen-ids.js';
import { contextOf, markTracing, newRunTraceContext, traceHeaders, withStoredContext } from '../../tracing/context.js';
import { exportRunSpan, inChatSpan, inToolSpan, type EndedRun } from '../../tracing/gen-ai.js';
import { tracingConfigured } from '../../tracing/tracing.js';
import * as conventions from '../../tracing/semantic-conventions.js';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';

const CAPTURE = 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT';

describe('tracing', () => {
  it('names attributes, events and operations exactly as the GenAI semantic conventions do', () => {
    for (const [name, value] of Object.entries(conventions)) assert.equal(value, (incubating as Record<string, unknown>)[name], name);
  });

  it('is on only with an OTLP endpoint, and not when the SDK or the traces exporter is turned off', () => {
    assert.equal(tracingConfigured({}), false);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), true);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }), true);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318', OTEL_SDK_DISABLED: 'true' }), false);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318', OTEL_TRACES_EXPORTER: 'none' }), false);
  });

  it('stores nothing and sends no headers while tracing is off', () => {
    assert.equal(newRunTraceContext(), null);
    assert.deepEqual(traceHeaders(), {});
  });

  describe('with a tracer registered', () => {
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({
      idGenerator: choosingIdGenerator(new RandomIdGenerator()),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const stored = { trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16), parent_span_id: 'c'.repeat(16), sampled: true };

    before(() => {
      // As startTracing registers it: the context manager and the W3C propagator with it.
      provider.register();
      markTracing(true);
    });
    after(async () => {
      markTracing(false);
      delete process.env[CAPTURE];
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    });
    beforeEach(() => exporter.reset());

    it("gives a run a span id of its own under the request's span, and a hop one under its network run's", () => {
      const request = trace.getTracer('t').startSpan('request');
      const run = context.with(trace.setSpan(context.active(), request), () => newRunTraceContext());
      request.end();
      assert.equal(run!.trace_id, request.spanContext().traceId);
      assert.equal(run!.parent_span_id, request.spanContext().spanId);
      assert.match(run!.span_id, /^[0-9a-f]{16}$/);
      const hop = newRunTraceContext(run);
      assert.equal(hop!.trace_id, run!.trace_id);
      assert.equal(hop!.parent_span_id, run!.span_id);
      assert.notEqual(hop!.span_id, run!.span_id);
      const root = newRunTraceContext();
      assert.equal(root!.parent_span_id, null);
      assert.match(root!.trace_id, /^[0-9a-f]{32}$/);
    });

    it('exports the run span with its stored ids, its real start and its scores as evaluation events', () => {
      const run: EndedRun = {
        id: 'run_1',
        trace_context: stored,
        status: 'completed',
        agent_id: 'agt_1',
        network_id: null,
        name: 'support',
        parent_run_id: null,
        hop_index: null,
        thread_id: 'thr_1',
        model: 'gpt-4.1-mini',
        resolved_model: 'gpt-4.1-mini',
        input_tokens: 40,
        output_tokens: 12,
        cached_tokens: 0,
        cost: '0.0000352',
        input: [{ role: 'user', content: 'the secret question' }],
        output_text: 'the secret answer',
        error: null,
        created_at: new Date('2026-01-01T00:00:00Z'),
        completed_at: new Date('2026-01-01T00:00:02Z'),
        scores: [{ scorer: 'tool_success', value: 1, explanation: 'every tool call succeeded' }],
      };
      exportRunSpan(run);
      const [span] = exporter.getFinishedSpans();
      assert.equal(span!.name, 'invoke_agent support');
      assert.equal(span!.spanContext().traceId, stored.trace_id);
      assert.equal(span!.spanContext().spanId, stored.span_id);
      assert.equal(span!.parentSpanContext?.spanId, stored.parent_span_id);
      assert.deepEqual(span!.startTime, [1767225600, 0]);
      assert.deepEqual(span!.endTime, [1767225602, 0]);
      assert.equal(span!.attributes['gen_ai.operation.name'], 'invoke_agent');
      assert.equal(span!.attributes['gen_ai.agent.id'], 'agt_1');
      assert.equal(span!.attributes['gen_ai.conversation.id'], 'thr_1');
      assert.equal(span!.attributes['agentplane.cost.usd'], 0.0000352);
      assert.deepEqual(
        span!.events.map((event) => [event.name, event.attributes]),
        [['gen_ai.evaluation.result', { 'gen_ai.evaluation.name': 'tool_success', 'gen_ai.evaluation.score.value': 1 }]],
      );
      assert.ok(!JSON.stringify(span!.attributes).includes('secret'));
      // The next span gets ids of its own again.
      const next = trace.getTracer('t').startSpan('next');
      next.end();
      assert.notEqual(next.spanContext().spanId, stored.span_id);
    });

    it("makes model and tool calls children of the run's span, with no content unless the operator opts in", async () => {
      const call = { provider: 'openai', model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'the secret question' }] };
      const tool = { name: 'lookup', callId: 'call_1', type: 'http', arguments: '{"q":"the secret argument"}' };
      const traced = async () => {
        await inChatSpan(stored, call, async (done) =>
          done({ content: 'the secret answer', usage: { input_tokens: 5, output_tokens: 2 } }),
        );
        return inToolSpan(stored, tool, async (done) => {
          done({ content: 'the secret result' });
          return traceHeaders();
        });
      };
      const headers = await traced();
      const [chat, execute] = exporter.getFinishedSpans();
      assert.equal(chat!.name, 'chat gpt-4.1-mini');
      assert.equal(chat!.parentSpanContext?.spanId, stored.span_id);
      assert.equal(chat!.attributes['gen_ai.provider.name'], 'openai');
      assert.equal(chat!.attributes['gen_ai.usage.output_tokens'], 2);
      assert.equal(execute!.name, 'execute_tool lookup');
      assert.equal(execute!.attributes['gen_ai.tool.call.id'], 'call_1');
      assert.equal(headers.traceparent, `00-${stored.trace_id}-${execute!.spanContext().spanId}-01`);
      assert.ok(!JSON.stringify([chat!.attributes, execute!.attributes]).includes('secret'));

      exporter.reset();
      process.env[CAPTURE] = 'true';
      await traced();
      const [chatWith, executeWith] = exporter.getFinishedSpans();
      assert.match(String(chatWith!.attributes['gen_ai.input.messages']), /the secret question/);
      assert.match(String(chatWith!.attributes['gen_ai.output.messages']), /the secret answer/);
      assert.equal(executeWith!.attributes['gen_ai.tool.call.arguments'], '{"q":"the secret argument"}');
      assert.equal(executeWith!.attributes['gen_ai.tool.call.result'], 'the secret result');
      delete process.env[CAPTURE];
    });

    it('sends the stored span as the traceparent of what is done within it', () => {
      const headers = withStoredContext(stored, () => traceHeaders());
      assert.equal(headers.traceparent, `00-${stored.trace_id}-${stored.span_id}-01`);
      assert.equal(trace.getSpanContext(contextOf(stored))?.isRemote, true);
    });
  });
});
