/**
 * A request answered before its body was read through (refused, or too large) leaves the rest of that body
 * on the connection. It is read and discarded, up to a bound, so that the client sees the answer and the
 * connection serves its next request instead of parsing the leftover bytes as one; past the bound the
 * connection is closed.
 */
import type { ApiContext } from './context.js';

const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;

export function drainUnreadBody(ctx: ApiContext): void {
  const req = ctx.req;
  if (req.complete) return;
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DRAIN_LIMIT_BYTES) req.destroy();
  });
  req.resume();
  if (Number(ctx.get('content-length') || 0) > DRAIN_LIMIT_BYTES * 2) ctx.set('Connection', 'close');
}
