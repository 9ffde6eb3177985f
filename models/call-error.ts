/**
 * How a model call failed, in the terms its caller acts on: whether trying again (later, or with the next
 * candidate model) can help. The SDKs' own errors are translated here, once, for both providers.
 */
import type { APIError as AnthropicApiError } from '@anthropic-ai/sdk';
import type { APIError as OpenAiApiError } from 'openai';
import type { ModelProvider } from './catalogue.js';
import { RETRYABLE_MODEL_CALL_ERROR_KINDS, type ModelCallErrorKind } from './failure-kinds.js';
import { MODEL_RETRY_MAX_INTERVAL_MS } from './retry-interval.js';
import { storableText } from './storable-text.js';

export type { ModelCallErrorKind } from './failure-kinds.js';

const RETRYABLE: ReadonlySet<ModelCallErrorKind> = new Set(RETRYABLE_MODEL_CALL_ERROR_KINDS);

export class ModelCallError extends Error {
  readonly kind: ModelCallErrorKind;
  readonly retryable: boolean;
  /** The provider's HTTP status, when it answered with one. */
  readonly status?: number;
  /** How long the provider asked to be left alone (Retry-After), when it said. */
  readonly retryAfterMs?: number;

  constructor(kind: ModelCallErrorKind, message: string, options: { status?: number; retryAfterMs?: number; cause?: unknown } = {}) {
    // A provider's words reach the run's error, which is stored.
    super(storableText(message), { cause: options.cause });
    this.name = 'ModelCallError';
    this.kind = kind;
    this.retryable = RETRYABLE.has(kind);
    if (options.status !== undefined) this.status = options.status;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

/** Why our side ended the call, if it did: the caller's signal, or the call's own deadline. */
export type CallEnding = 'cancelled' | 'timeout' | null;

type SdkApiError = OpenAiApiError | AnthropicApiError;

/**
 * What the SDKs' errors are, for telling them apart. The SDKs are loaded with their clients, on a process's first
 * call (providers/*-client.ts); a failure to classify comes from a call, so at least one is loaded already.
 */
async function sdkErrors() {
  const [anthropic, openAi] = await Promise.all([import('@anthropic-ai/sdk'), import('openai')]);
  return {
    isApiError: (err: unknown): err is SdkApiError => err instanceof openAi.APIError || err instanceof anthropic.APIError,
    isAnthropicApiError: (err: unknown): err is AnthropicApiError => err instanceof anthropic.APIError,
    isUserAbort: (err: unknown) => err instanceof openAi.APIUserAbortError || err instanceof anthropic.APIUserAbortError,
    isConnectTimeout: (err: unknown) =>
      err instanceof openAi.APIConnectionTimeoutError || err instanceof anthropic.APIConnectionTimeoutError,
  };
}

/**
 * Retry-After in milliseconds: OpenAI's `retry-after-ms`, else `retry-after` in seconds or as an HTTP date.
 * Never more than the retry policy's maximum interval: a provider cannot park a run for longer.
 */
export function retryAfterMs(headers: Headers | undefined): number | undefined {
  const asked = askedRetryAfterMs(headers);
  return asked === undefined ? undefined : Math.min(asked, MODEL_RETRY_MAX_INTERVAL_MS);
}

function askedRetryAfterMs(headers: Headers | undefined): number | undefined {
  const exact = Number(headers?.get('retry-after-ms') ?? NaN);
  if (Number.isFinite(exact) && exact >= 0) return Math.ceil(exact);
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function kindOfStatus(status: number): ModelCallErrorKind {
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 408) return 'timeout';
  if (status >= 500) return 'unavailable';
  return 'rejected';
}

export async function classifyFailure(err: unknown, provider: ModelProvider, ending: CallEnding): Promise<ModelCallError> {
  if (err instanceof ModelCallError) return err;
  const { isApiError, isAnthropicApiError, isUserAbort, isConnectTimeout } = await sdkErrors();
  const reason = err instanceof Error ? err.message : String(err);
  if (ending === 'cancelled' || (ending === null && isUserAbort(err)))
    return new ModelCallError('cancelled', `the ${provider} call was cancelled`, { cause: err });
  if (ending === 'timeout' || isConnectTimeout(err)) return new ModelCallError('timeout', `the ${provider} call timed out`, { cause: err });
  if (isApiError(err) && err.status !== undefined) {
    const kind = kindOfStatus(err.status);
    const wait = retryAfterMs(err.headers);
    return new ModelCallError(kind, `${provider} answered ${reason}`, {
      status: err.status,
      cause: err,
      ...(wait === undefined ? {} : { retryAfterMs: wait }),
    });
  }
  // A refused connection, a connection dropped mid-stream, or an error event inside the stream (an
  // overloaded provider sends one): the provider could not finish, and may later.
  const rateLimited = isAnthropicApiError(err) && err.type === 'rate_limit_error';
  return new ModelCallError(rateLimited ? 'rate_limited' : 'unavailable', `${provider} could not be reached or did not finish: ${reason}`, {
    cause: err,
  });
}
