/**
 * `tools/call` of an agent's or network's tool: a run made by the run endpoints' own code (startRun), followed
 * to its end. Its output is the tool's text; a run that fails or is cancelled is a tool result with `isError`.
 * A client that closes the call's stream, or cancels the call, cancels the run.
 */
import { idleWhile } from '../../fair-admission.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ApiContext, ApiDeps } from '../../context.js';
import { callerOf } from '../../context.js';
import { audited } from '../../audit.js';
import { ApiError, toApiError } from '../../errors.js';
import { checkJsonBody } from '../../validation.js';
import { findAgent } from '../../../records/agents.js';
import { findNetwork } from '../../../records/networks.js';
import { findRun, isFinished, type RunRecord } from '../../../records/runs.js';
import { startRun } from '../runs/create.js';
import { requestRunCancel } from '../runs/cancel.js';
import { runWhenEnded } from '../runs/run-log.js';
import { reportRunProgress } from './run-progress.js';
import type { ToolTarget } from './tool-names.js';

/**
 * The longest a call waits for its run; a run still going then is answered as it stands (not an error), to be
 * followed through the REST API. Clients keep the request open past their own timeout with progress.
 */
const CALL_WAIT_MS = 15 * 60_000;
const ARGUMENTS = new Set(['input', 'thread_id']);

export interface RunCall {
  /** Aborts when the client goes away or cancels the call. */
  signal: AbortSignal;
  /** Notifications for the caller's `progressToken`, if it sent one. */
  notify?: (progress: number, message: string) => Promise<void>;
  /** `_meta["agentplane.io/idempotency-key"]`, as `Idempotency-Key` is to the REST endpoint. */
  idempotencyKey?: string;
}

/** A refusal the model can act on (a busy thread, a budget reached, a bad argument), as the tool's answer. */
export function refusalResult(err: ApiError): CallToolResult {
  return {
    content: [{ type: 'text', text: `${err.message} (${err.code})` }],
    isError: true,
  };
}

function resultOf(run: RunRecord, closing: boolean): CallToolResult {
  const asking = run.status === 'in_progress' && run.pending_approvals > 0;
  const structured = {
    run_id: run.id,
    status: asking ? 'requires_action' : run.status,
    cost: run.cost,
    thread_id: run.thread_id,
    error: run.error,
  };
  const meta = { type: 'text' as const, text: JSON.stringify(structured) };
  const said = (text: string, isError = false): CallToolResult => ({
    content: [{ type: 'text', text }, meta],
    structuredContent: structured,
    ...(isError ? { isError } : {}),
  });
  if (run.status === 'completed') return said(run.output_text);
  if (run.status === 'failed') return said(`The run ${run.id} failed: ${run.error?.message ?? 'no reason recorded'}`, true);
  if (run.status === 'cancelled') return said(`The run ${run.id} was cancelled.`, true);
  if (asking)
    return said(`The run ${run.id} waits for a person to approve a tool call; read its result from GET /v1/runs/${run.id} once decided.`);
  const why = closing ? 'This server is restarting' : 'The run takes longer than a call waits';
  return said(`${why}; the run ${run.id} goes on (${run.status}): read its result from GET /v1/runs/${run.id}.`);
}

async function runnableExists(deps: ApiDeps, projectId: string, target: ToolTarget): Promise<boolean> {
  return target.kind === 'agent'
    ? (await findAgent(deps.db, projectId, target.id)) !== null
    : (await findNetwork(deps.db, projectId, target.id)) !== null;
}

export async function callRunTool(
  ctx: ApiContext,
  deps: ApiDeps,
  toolName: string,
  target: ToolTarget,
  args: Record<string, unknown>,
  call: RunCall,
): Promise<CallToolResult> {
  const { projectId } = callerOf(ctx);
  // Another project's agent is as unknown as one that never was.
  if (!(await runnableExists(deps, projectId, target))) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${toolName}`);
  const unknown = Object.keys(args).find((name) => !ARGUMENTS.has(name));
  if (unknown !== undefined)
    return refusalResult(new ApiError(400, 'invalid_request_error', 'unknown_parameter', `Unknown argument \`${unknown}\`.`));

  let runId: string;
  try {
    const body = checkJsonBody(target.kind === 'agent' ? 'runAgent' : 'runNetwork', args);
    let started: string | undefined;
    // Audited as the run endpoints are: a run commits with its entry; a refused one gets its entry too.
    await audited(
      deps.db,
      'run.create',
      'run',
    )(ctx, async () => {
      const identity = { tool: target, ...body };
      ({ runId: started } = await startRun(ctx, deps, target.kind, target.id, body, { identity, idempotencyKey: call.idempotencyKey }));
      ctx.state.auditTargetId = started;
      ctx.status = 200;
    });
    runId = started!;
  } catch (err) {
    // Refused as the endpoint would refuse it (a dependency down included): the model reads why.
    const refusal = toApiError(err);
    if (refusal) return refusalResult(refusal);
    throw err;
  }

  const following = new AbortController();
  const progress = call.notify
    ? reportRunProgress(deps, runId, AbortSignal.any([following.signal, call.signal]), call.notify).catch((err) =>
        ctx.state.log.warn({ err, run_id: runId }, 'progress of an MCP tool call stopped'),
      )
    : Promise.resolve();
  try {
    const run = await idleWhile(ctx, () => runWhenEnded(deps, projectId, runId, CALL_WAIT_MS, call.signal, { orAsking: true }));
    if (call.signal.aborted && !isFinished(run.status)) {
      await cancelForCaller(ctx, deps, run);
      return resultOf((await findRun(deps.db, projectId, runId)) ?? run, false);
    }
    // The run's last events are reported before its result, which ends the call.
    if (!isFinished(run.status)) following.abort();
    await progress;
    return resultOf(run, deps.runEvents.closing.aborted);
  } finally {
    following.abort();
  }
}

/** The client went away or cancelled the call: the run it started is cancelled, audited as a cancel. */
async function cancelForCaller(ctx: ApiContext, deps: ApiDeps, run: RunRecord): Promise<void> {
  ctx.state.log.info({ run_id: run.id }, 'MCP tool call cancelled by its client; cancelling its run');
  await audited(
    deps.db,
    'run.cancel',
    'run',
  )(ctx, async () => {
    ctx.state.auditTargetId = run.id;
    await requestRunCancel(deps, run);
  }).catch((err: unknown) => ctx.state.log.warn({ err, run_id: run.id }, 'could not cancel the run of a cancelled MCP tool call'));
}
