/**
 * A streaming method's answer: JSON-RPC responses as Server-Sent Events (`data:` lines), kept alive while
 * the task is quiet, held to the pace the client reads at (one that takes in nothing for the stall bound is
 * disconnected), and ended when the task ends. A refusal before the first event is an ordinary JSON-RPC
 * error response instead.
 */
import { PassThrough } from 'node:stream';
import { formatSSEEvent, SSE_HEADERS } from '@a2a-js/sdk';
import { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import type { ApiContext, ApiDeps } from '../context.js';
import { HttpRefusal } from './request-handler.js';
import type { JsonRpcId } from './refusals.js';
import { drained } from '../routes/runs/run-log.js';

// A comment line this often keeps proxies from closing a quiet stream.
const KEEPALIVE_MS = 15_000;

export async function writeEventStream(
  ctx: ApiContext,
  deps: ApiDeps,
  events: AsyncGenerator<unknown>,
  id: JsonRpcId,
  legacy: boolean,
  closed: AbortSignal,
): Promise<void> {
  const errorOf = (err: unknown) => ({
    jsonrpc: '2.0',
    id,
    error: legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err) : JsonRpcTransportHandler.mapToJSONRPCError(err),
  });
  let first: IteratorResult<unknown>;
  try {
    first = await events.next();
  } catch (err) {
    if (err instanceof HttpRefusal) throw err.apiError;
    ctx.status = 200;
    ctx.body = errorOf(err);
    return;
  }

  const stream = new PassThrough();
  ctx.status = 200;
  ctx.set(SSE_HEADERS);
  ctx.body = stream;
  const ended = AbortSignal.any([closed, deps.runEvents.closing]);
  const stallMs = deps.streamSlots.limits.stallSeconds * 1000;
  let stalled = false;
  const send = async (text: string): Promise<boolean> => {
    if (stream.write(text) || (await drained(stream, stallMs, ended))) return true;
    stalled = true;
    return false;
  };
  // Between events only: a write is one whole event, and a comment is skipped while the client is behind.
  const keepalive = setInterval(() => stream.writableLength === 0 && stream.write(': keep-alive\n\n'), KEEPALIVE_MS);
  const pump = async () => {
    for (let next = first; !next.done && !ended.aborted; next = await events.next()) {
      if (!(await send(formatSSEEvent(next.value)))) return;
    }
  };
  pump()
    .catch(async (err: unknown) => {
      ctx.state.log.warn({ err }, 'A2A event stream ended early');
      if (!ended.aborted) await send(formatSSEEvent(errorOf(err))).catch(() => false);
    })
    .finally(async () => {
      clearInterval(keepalive);
      // The task goes on: closing its stream is not cancelling it.
      await events.return(undefined).catch(() => undefined);
      if (stalled) ctx.res.destroy();
      else stream.end();
    });
}
