/**
 * The span ids the tracer is to give its next span, when a span must have an id chosen before it starts: a run's
 * `invoke_agent` span, whose id its children carry from the run's creation on, and which is only exported when the
 * run ends, by whichever process ends it. Starting a span is synchronous, so the id set just before is the one used.
 */
let next: { traceId: string; spanId: string } | undefined;

export function chooseNextIds(ids: { traceId: string; spanId: string }): void {
  next = ids;
}

/** The chosen ids, once; undefined when none were chosen. */
export function takeChosenIds(): { traceId: string; spanId: string } | undefined {
  const chosen = next;
  next = undefined;
  return chosen;
}
