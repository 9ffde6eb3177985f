/**
 * The longest a failed model call waits before it is tried again: the most of a provider's Retry-After that
 * is honoured, and the maximum interval of the model calls' retry policies. Read by the workflows too, so
 * this module imports nothing.
 */
export const MODEL_RETRY_MAX_INTERVAL_MS = 30_000;
