/**
 * A server span per request, a child of the caller's W3C `traceparent` when it sends one: what the request starts
 * (a run, an upload, an event's deliveries) is part of its trace. Only installed when tracing is on.
 */
import type { Middleware } from 'koa';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { TRACER_NAME } from '../../tracing/context.js';
import type { ApiState } from '../context.js';

export function traceRequests(): Middleware<ApiState> {
  const tracer = trace.getTracer(TRACER_NAME);
  return async (ctx, next) => {
    const parent = propagation.extract(context.active(), ctx.headers);
    const span = tracer.startSpan(
      ctx.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': ctx.method,
          'url.path': ctx.path,
          'url.scheme': ctx.protocol,
          'server.address': ctx.hostname,
          'user_agent.original': ctx.get('user-agent') || undefined,
        },
      },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute;
      if (route) {
        span.updateName(`${ctx.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', ctx.status);
      if (ctx.status >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute('error.type', String(ctx.status));
      }
      if (ctx.state.caller?.projectId) span.setAttribute('agentplane.project.id', ctx.state.caller.projectId);
      span.end();
    }
  };
}
