/**
 * One attempt at delivering an event: a signed POST through the network guard, bounded in time. 2xx is
 * delivered; any other answer, a redirect included (never followed: its target is not checked), a
 * timeout, a refused target or a connection failure is a failed attempt, described in a few words.
 */
import { guardedRequest, PrivateTargetError } from '../../tools/network-guard.js';
import type { DeliveryTarget } from '../../records/webhook-deliveries.js';
import { signingSecretsOf } from '../../records/webhooks.js';
import { presentEvent } from '../../presenters/event.js';
import { signedHeaders } from './signature.js';
import { SpanStatusCode } from '@opentelemetry/api';
import { contextOf, inSpan, SpanKind, traceHeaders } from '../../tracing/context.js';

export const ATTEMPT_TIMEOUT_MS = 15_000;
export const USER_AGENT = 'Agentplane-Webhooks/1';

export interface SentAttempt {
  delivered: boolean;
  responseStatus: number | null;
  error: string | null;
  durationMs: number;
}

export interface SignedPost {
  /** The project whose endpoint it is. */
  projectId: string;
  url: string;
  eventId: string;
  body: string;
  secrets: string[];
  allowPrivate: boolean;
  signal?: AbortSignal;
}

export async function postSigned(post: SignedPost): Promise<SentAttempt> {
  const started = performance.now();
  const timeout = AbortSignal.timeout(ATTEMPT_TIMEOUT_MS);
  const signal = post.signal ? AbortSignal.any([timeout, post.signal]) : timeout;
  const timestamp = Math.floor(Date.now() / 1000);
  const done = (responseStatus: number | null, error: string | null): SentAttempt => ({
    delivered: error === null,
    responseStatus,
    error,
    durationMs: Math.round(performance.now() - started),
  });
  try {
    const response = await guardedRequest(new URL(post.url), {
      projectId: post.projectId,
      method: 'POST',
      headers: {
        ...signedHeaders(post.secrets, post.eventId, timestamp, post.body),
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...traceHeaders(),
      },
      body: post.body,
      signal,
      allowPrivate: post.allowPrivate,
    });
    // The answer's body is not kept: read to its end (bounded by the timeout), so the connection closes cleanly.
    response.resume();
    await new Promise<void>((resolve) => {
      response.once('end', resolve);
      response.once('error', () => resolve());
      response.once('close', () => resolve());
    });
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) return done(status, null);
    if (status >= 300 && status < 400) return done(status, `HTTP ${status}: redirects are not followed`);
    return done(status, `HTTP ${status}`);
  } catch (err) {
    if (timeout.aborted) return done(null, `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`);
    // The attempt's worker gave it up (stopping, or told by Temporal that the attempt is over).
    if (post.signal?.aborted) return done(null, 'abandoned before an answer came');
    if (err instanceof PrivateTargetError) return done(null, `refused: ${err.message}`);
    const code = (err as { code?: string }).code;
    return done(null, code ? `${code}: ${(err as Error).message}` : (err as Error).message);
  }
}

/**
 * A delivery's event, signed with its endpoint's secrets and posted to it: a span of the trace of what the event
 * tells (a run, an upload), whose context the request carries.
 */
export function postEvent(
  { delivery, endpoint, event }: DeliveryTarget,
  allowPrivate: boolean,
  signal?: AbortSignal,
): Promise<SentAttempt> {
  const url = new URL(endpoint.url);
  const attributes = {
    'http.request.method': 'POST',
    'server.address': url.hostname,
    'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    'url.scheme': url.protocol.replace(':', ''),
    'agentplane.webhook.endpoint_id': endpoint.id,
    'agentplane.webhook.delivery_id': delivery.id,
    'agentplane.event.id': event.id,
    'agentplane.event.type': event.type,
  };
  return inSpan(
    `deliver_webhook ${event.type}`,
    { kind: SpanKind.CLIENT, attributes, parent: contextOf(event.trace_context) },
    async (span) => {
      const sent = await postSigned({
        projectId: endpoint.project_id,
        url: endpoint.url,
        eventId: event.id,
        body: JSON.stringify(presentEvent(event)),
        secrets: signingSecretsOf(endpoint),
        allowPrivate,
        signal,
      });
      if (sent.responseStatus !== null) span?.setAttribute('http.response.status_code', sent.responseStatus);
      if (!sent.delivered) span?.setStatus({ code: SpanStatusCode.ERROR, message: sent.error ?? undefined });
      return sent;
    },
  );
}
