/**
 * The Temporal connection of every process: each call bounded by a deadline, and Node's promise hooks left off.
 *
 * The SDK scopes each call's metadata (its namespace, a deadline) with the connection's AsyncLocalStorage, and
 * the first use of that storage turns promise hooks on for the whole process: from then on every promise of every
 * request pays for them, reads that never call Temporal included. The SDK reads the scope as a call is made,
 * before the call reaches its interceptors, so the first interceptor turns the storage off again as each call goes
 * out. Nothing may therefore rely on the scope across an `await`, which is why a call's deadline comes from that
 * interceptor and not from `withDeadline` around a piece of work.
 */
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

/** Long enough for any one call to a Temporal that answers; short enough that the API answers 503 in time. */
export const TEMPORAL_CALL_DEADLINE_MS = 2_000;

/** Lazy: it connects at its first call, so a process can start while Temporal is still coming up. */
export function temporalConnection(address: string, callDeadlineMs = TEMPORAL_CALL_DEADLINE_MS): Connection {
  const scope: { connection?: Connection } = {};
  const outgoing: Interceptor = (options, nextCall) => {
    scope.connection?.callContextStorage.disable();
    return new InterceptingCall(nextCall(options.deadline === undefined ? { ...options, deadline: Date.now() + callDeadlineMs } : options));
  };
  // The deadline is given first, so the SDK's retries of a call (which follow, as they do by default) share it.
  scope.connection = Connection.lazy({ address, interceptors: [outgoing, makeGrpcRetryInterceptor(defaultGrpcRetryOptions())] });
  return scope.connection;
}
