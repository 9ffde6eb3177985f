/**
 * Reaching a remote A2A agent through the official SDK: its card, then a client for the interface the card
 * prefers (JSON-RPC or HTTP+JSON, A2A 1.0 or 0.3, as the card says). Every request, the card's included and
 * those to the interfaces the card names, goes through the network guard; redirects are not followed, so none
 * leads past it.
 */
import { LRUCache } from 'lru-cache';
import type { AgentCard } from '@a2a-js/sdk';
import { Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import type { A2aToolDefinition } from './definitions.js';
import { guardedFetch } from './guarded-fetch.js';
import type { Reach } from './network-guard.js';
import { retryAfterMs, ToolUnavailableError } from './outcomes.js';
import { traceHeaders } from '../tracing/context.js';

/** The extension by which an Agentplane (or any agent that speaks it) reports what a task cost. */
export const COST_EXTENSION = 'https://agentplane.io/a2a/extensions/cost/v1';

// The most a card may be: cards are a page of JSON, and a bigger one is not read.
export const MAX_CARD_BYTES = 256 * 1024;
// The most one answer of the remote agent (a task, with its artifacts) may be.
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

// Cards read for a run, by run and URL: a run offers the tool, then calls it, without asking again.
const cards = new LRUCache<string, AgentCard>({ max: 500, ttl: 60 * 60_000 });

/**
 * The headers every request carries besides the protocol's own: the definition's (its credentials), and the
 * call's trace (`traceparent`) when tracing is on, so that the remote agent's work joins the run's trace.
 */
function outgoingHeaders(def: A2aToolDefinition): Record<string, string> {
  return { 'user-agent': 'agentplane', ...def.headers, ...traceHeaders() };
}

/**
 * A fetch for the SDK: through the guard, bounded, with the definition's headers (which the SDK does not send
 * with the card's request), and with 429 and 5xx thrown as ToolUnavailableError, to be tried again later.
 */
function remoteFetch(def: A2aToolDefinition, reach: Reach, maxResponseBytes: number): typeof fetch {
  const send = guardedFetch({ projectId: reach.projectId, allowPrivate: reach.allowPrivate, maxResponseBytes });
  const bound = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    for (const [name, value] of Object.entries(outgoingHeaders(def))) if (!headers.has(name)) headers.set(name, value);
    const url = input instanceof Request ? input.url : input;
    const response = await send(url, { ...init, headers, signal: init.signal ?? reach.signal });
    if (response.status === 429 || response.status >= 500) {
      await response.body?.cancel().catch(() => undefined);
      throw new ToolUnavailableError(
        `${def.name} answered HTTP ${response.status}`,
        retryAfterMs(response.headers.get('retry-after') ?? undefined),
      );
    }
    return response;
  };
  return bound as typeof fetch;
}

/** The agent's card, read once for a run (and again by another worker), within MAX_CARD_BYTES. */
export async function agentCardOf(def: A2aToolDefinition, reach: Reach & { runId?: string }): Promise<AgentCard> {
  const key = `${reach.runId ?? ''} ${def.card_url}`;
  const cached = reach.runId ? cards.get(key) : undefined;
  if (cached) return cached;
  const resolver = new DefaultAgentCardResolver({ fetchImpl: remoteFetch(def, reach, MAX_CARD_BYTES), legacyCompat: { enabled: true } });
  // An empty path: the URL is the card's own, not a base for /.well-known/agent-card.json.
  const card = await resolver.resolve(def.card_url, '');
  if (reach.runId) cards.set(key, card);
  return card;
}

/** Whether the card says the agent reports a task's cost (COST_EXTENSION). */
export const reportsCost = (card: AgentCard) => (card.capabilities?.extensions ?? []).some((e) => e.uri === COST_EXTENSION);

/** A client for the interface the card prefers among those the SDK speaks. */
export async function clientFor(def: A2aToolDefinition, card: AgentCard, reach: Reach): Promise<Client> {
  const fetchImpl = remoteFetch(def, reach, MAX_ANSWER_BYTES);
  // These transports only, each through the guard: none the SDK would add by default, with a fetch of its own.
  const factory = new ClientFactory({
    transports: [
      new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
      new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
    ],
    // The task is followed by asking for it (tasks/get), so a send answers as soon as the task exists.
    clientConfig: { polling: true },
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
  });
  return factory.createFromAgentCard(card);
}
