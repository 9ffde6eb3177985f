/**
 * The span ids the tracer is to give its next span, when a span must have an id chosen before it starts: a run's
 * `invoke_agent` span, whose id its children carry from the run's creation on, and which is only exported when the
 * run ends, by whichever process ends it. Starting a span is synchronous, so the ids set just before are the ones used.
 */
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';

let next: { traceId: string; spanId: string } | undefined;
let nextTraceId: string | undefined;

export function chooseNextIds(ids: { traceId: string; spanId: string }): void {
  next = ids;
}

/**
 * The SDK's id generator, giving chosen ids when there are some and `random`'s otherwise. The SDK asks for the span
 * id first, then for a trace id only when the span has no parent: a chosen pair is taken whole with the span id, its
 * trace id kept for the root case.
 */
export function choosingIdGenerator(random: IdGenerator): IdGenerator {
  return {
    generateSpanId: () => {
      const chosen = next;
      next = undefined;
      nextTraceId = chosen?.traceId;
      return chosen?.spanId ?? random.generateSpanId();
    },
    generateTraceId: () => {
      const chosen = nextTraceId;
      nextTraceId = undefined;
      return chosen ?? random.generateTraceId();
    },
  };
}
