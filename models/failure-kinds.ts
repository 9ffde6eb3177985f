/**
 * How a model call can fail, and which failures end a model step for good. Read by the workflows too (their
 * retry policies and fallbacks), so this module imports nothing.
 */

export const MODEL_CALL_ERROR_KINDS = [
  'not_configured',
  'rate_limited',
  'unavailable',
  'timeout',
  'rejected',
  'unauthorized',
  'cancelled',
] as const;

export type ModelCallErrorKind = (typeof MODEL_CALL_ERROR_KINDS)[number];

/** The kinds trying again can help with: later, or with the next candidate model. */
export const RETRYABLE_MODEL_CALL_ERROR_KINDS: readonly ModelCallErrorKind[] = ['rate_limited', 'unavailable', 'timeout'];

/** A model call not made: its worst case would not fit the run's cost cap or a budget. Ends the run `failed` with this code. */
export const COST_LIMIT_REACHED = 'cost_limit_reached';

/** The failure of a model step whose model the catalogue does not hold (any longer). */
export const MODEL_NOT_FOUND = 'model_not_found';

/**
 * The failure types that end a model step at once: no later attempt and no other candidate model is tried.
 * A cancelled call is left out: it ends with its workflow, which does not retry it either.
 */
export const FINAL_MODEL_FAILURES: readonly string[] = ['rejected', 'unauthorized', 'not_configured', MODEL_NOT_FOUND, COST_LIMIT_REACHED];
