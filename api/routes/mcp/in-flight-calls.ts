/**
 * The tool calls this process is running, by API key and JSON-RPC request id. A stateless server receives a
 * client's `notifications/cancelled` in a POST of its own, with nothing but the request id to name the call;
 * it reaches the call here when that call runs on this process and is the key's only one with that id (two
 * clients sharing a key may both use id 1: then neither is cancelled by a guess). Closing the call's stream is
 * the signal that always works, on any replica.
 */
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/** Calls one key may have in flight on one process are bounded by its event stream slots. */
export class InFlightCalls {
  private readonly calls = new Map<string, Set<AbortController>>();

  /** Registers a call; the returned function unregisters it. */
  add(apiKeyId: string, requestId: RequestId, call: AbortController): () => void {
    const key = keyOf(apiKeyId, requestId);
    let calls = this.calls.get(key);
    if (!calls) this.calls.set(key, (calls = new Set()));
    calls.add(call);
    return () => {
      calls.delete(call);
      if (calls.size === 0 && this.calls.get(key) === calls) this.calls.delete(key);
    };
  }

  /** Aborts the key's call with this request id; false when there is none, or more than one. */
  cancel(apiKeyId: string, requestId: RequestId, reason: string): boolean {
    const calls = this.calls.get(keyOf(apiKeyId, requestId));
    if (!calls || calls.size !== 1) return false;
    for (const call of calls) call.abort(new Error(reason));
    return true;
  }
}

const keyOf = (apiKeyId: string, requestId: RequestId) => `${apiKeyId}\u0000${typeof requestId}:${String(requestId)}`;
