/** A model call's failure as its activity's, in the one vocabulary the workflows' retry policies read. */
import { ApplicationFailure } from '@temporalio/activity';
import type { ModelCallError } from '../models/call-error.js';

/**
 * Retried (no sooner than the provider asked, when it said) while trying again can help; otherwise final,
 * typed with the error's kind, one of the workflows' FINAL_MODEL_FAILURES.
 */
export function modelCallFailure(err: ModelCallError): ApplicationFailure {
  if (err.retryable) return ApplicationFailure.create({ message: err.message, type: err.kind, nextRetryDelay: err.retryAfterMs });
  return ApplicationFailure.nonRetryable(err.message, err.kind);
}
