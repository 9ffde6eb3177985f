/**
 * POST /v1/agents/{id}/run and POST /v1/networks/{id}/run. The run is committed first (with its audit entry and, given an
 * Idempotency-Key, the key), then its workflow is started; a start that fails (Temporal down) is made
 * later by the maintenance schedule, so an accepted run is never lost. A replayed key answers the same
 * run as it stands now.
 */
import { idleWhile } from '../../fair-admission.js';
import type { ApiContext, ApiDeps } from '../../context.js';
import { callerOf } from '../../context.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../errors.js';
import { refuseOverLimits } from './limits.js';
import type { Input } from '../../validation.js';
import { createOnce } from '../../idempotency.js';
import { respond } from '../../audit.js';
import type { Queryable } from '../../../records/db.js';
import { oldestActiveRunOnThread, createThread, findThread, THREAD_MESSAGES_MAX } from '../../../records/threads.js';
import { findRun, insertRun, isFinished } from '../../../records/runs.js';
import { runWhenEnded, streamRunEvents } from './run-log.js';
import { presentRunOf } from './run-object.js';
import { checkRunRequest, interruptRuns, lockUnderConcurrency, startAdmittedRun } from './admission.js';

// The longest a request waits for its run to end before answering 202.
const WAIT_MS = 30_000;

/**
 * Holds the thread's row while a run is admitted to it. A thread that holds THREAD_MESSAGES_MAX messages takes no
 * run (409); one with a run still to end makes the run wait for it when asked to, and otherwise refuses it (409).
 */
async function lockThreadForRun(tx: Queryable, projectId: string, threadId: string, onBusy: 'reject' | 'wait'): Promise<void> {
  const thread = await findThread(tx, projectId, threadId, { lock: true });
  if (!thread) throw NotFoundError('thread', threadId, 'thread_id');
  if (thread.message_count >= THREAD_MESSAGES_MAX) {
    throw ConflictError(
      'thread_full',
      `The thread ${threadId} holds ${thread.message_count} messages, as many as a thread may (${THREAD_MESSAGES_MAX}); go on in a new thread.`,
      'thread_id',
    );
  }
  if (onBusy === 'wait') return;
  const active = await oldestActiveRunOnThread(tx, threadId);
  if (active) {
    throw ConflictError(
      'thread_busy',
      `The thread ${threadId} has a run still to end (${active.id}); run again once it has, or set on_thread_busy to wait.`,
      'thread_id',
    );
  }
}

export type RunBody = Input<'runAgent'>['body'];

const newThread = (tx: Queryable, projectId: string, body: RunBody) =>
  createThread(tx, projectId, { subjectId: body.subject_id ?? null, metadata: {} });

/** How a caller other than the REST endpoint (the MCP server) names its request, for `Idempotency-Key`. */
export interface RunRequestOptions {
  /** What identifies the request beside its method and path; the body without `stream` and `wait` by default. */
  identity?: unknown;
  /** The idempotency key, in place of the `Idempotency-Key` header. */
  idempotencyKey?: string;
  /** A run given no thread begins one, in the transaction that makes the run (A2A: a message without a context). */
  newThread?: boolean;
  /**
   * Files that come with the request (an A2A message's file parts): recorded in the transaction that makes the run,
   * which they are attached to, and their extraction started before the run's workflow (which waits for it).
   */
  files?: { record: (tx: Queryable) => Promise<string[]>; extract: () => Promise<void> };
}

/**
 * Admits a run and starts its workflow: every check, budget, limit, concurrency policy and thread rule of the
 * run endpoints, and the run's audit entry. With `stream`, the event stream's slot is held and returned.
 */
export async function startRun(
  ctx: ApiContext,
  deps: ApiDeps,
  kind: 'agent' | 'network',
  targetId: string,
  body: RunBody,
  options: RunRequestOptions = {},
): Promise<{ runId: string; replayed: boolean; release?: () => void }> {
  const caller = callerOf(ctx);
  const { projectId } = caller;
  const { input, fileIds } = await checkRunRequest(deps, caller, kind, targetId, body);
  if (kind === 'network' && body.previous_run_id !== undefined) {
    throw InvalidRequestError(
      'unsupported_parameter',
      '`previous_run_id` continues agent runs; a network run starts its own conversation.',
      'previous_run_id',
    );
  }

  if (body.previous_run_id !== undefined) {
    const previous = await findRun(deps.db, projectId, body.previous_run_id);
    if (!previous) throw NotFoundError('run', body.previous_run_id, 'previous_run_id');
    if (previous.agent_id !== targetId) {
      const whose = previous.agent_id ? `agent ${previous.agent_id}` : `network ${previous.network_id}`;
      throw InvalidRequestError(
        'invalid_parameter',
        `Run ${previous.id} is a run of ${whose}; \`previous_run_id\` continues a run of this agent.`,
        'previous_run_id',
      );
    }
    if (!isFinished(previous.status)) {
      throw ConflictError('previous_run_active', `Run ${previous.id} has not ended yet; continue it once it has.`, 'previous_run_id');
    }
  }

  if (body.thread_id !== undefined && body.previous_run_id !== undefined) {
    throw InvalidRequestError(
      'invalid_parameter',
      'Give `thread_id` or `previous_run_id`, not both: a thread is the conversation.',
      'thread_id',
    );
  }
  const thread = body.thread_id === undefined ? null : await findThread(deps.db, projectId, body.thread_id);
  if (body.thread_id !== undefined && !thread) throw NotFoundError('thread', body.thread_id, 'thread_id');
  if (thread?.subject_id && body.subject_id !== undefined && body.subject_id !== thread.subject_id) {
    throw InvalidRequestError(
      'subject_mismatch',
      `The thread ${thread.id} is with the subject ${JSON.stringify(thread.subject_id)}; a run on it is for the same subject.`,
      'subject_id',
    );
  }

  const identity = options.identity ?? { ...body, stream: undefined, wait: undefined };

  // A streamed run holds an event stream: refused before anything is created when its key holds too many.
  const release = body.stream ? deps.streamSlots.take(caller.apiKeyId, ctx.state.place) : undefined;
  let interrupted: string[] = [];
  let taskQueue: string | undefined;
  const once = (create: Parameters<typeof createOnce>[3]) => createOnce(ctx, deps, identity, create, { key: options.idempotencyKey });
  const { created, replayed } = await once(async (tx) => {
    const { current, interrupted: earlier } = await lockUnderConcurrency(tx, projectId, kind, targetId);
    taskQueue = current.taskQueue;
    interrupted = earlier;
    // The thread's row is locked while its runs are looked at, so that two runs cannot both find it free.
    if (thread) await lockThreadForRun(tx, projectId, thread.id, body.on_thread_busy ?? 'reject');
    await refuseOverLimits(tx, deps, caller, current.agentIds);
    const attached = options.files ? await options.files.record(tx) : [];
    const runId = await insertRun(tx, {
      projectId,
      target: current.target,
      apiKeyId: caller.apiKeyId,
      model: body.model ?? current.model,
      input,
      fileIds: [...fileIds, ...attached],
      previousRunId: body.previous_run_id ?? null,
      threadId: thread?.id ?? (options.newThread ? (await newThread(tx, projectId, body)).id : null),
      subjectId: body.subject_id ?? thread?.subject_id ?? null,
      maxSteps: kind === 'agent' ? (body.max_steps ?? current.maxSteps) : current.maxSteps,
      maxCostUsd: body.max_cost_usd ?? current.maxCostUsd,
      metadata: body.metadata ?? {},
    });
    return { status: 202, body: { id: runId } };
  }).catch((err: unknown) => {
    release?.();
    throw err;
  });
  const runId = created.body.id;

  if (!replayed) {
    const warn = (details: Record<string, unknown>, message: string) => ctx.state.log.warn(details, message);
    await options.files?.extract();
    await interruptRuns(deps, kind, interrupted, warn);
    await startAdmittedRun(deps, kind, runId, projectId, taskQueue, warn);
  }

  return { runId, replayed, release };
}

export async function createRun(
  ctx: ApiContext,
  deps: ApiDeps,
  { path: { id: targetId }, body }: Input<'runAgent'> | Input<'runNetwork'>,
  kind: 'agent' | 'network' = 'agent',
): Promise<void> {
  const { projectId } = callerOf(ctx);
  const { runId, release } = await startRun(ctx, deps, kind, targetId, body);
  ctx.set('Location', `/v1/runs/${runId}`);
  if (release) {
    ctx.state.auditTargetId = runId;
    return streamRunEvents(ctx, deps, runId, 0, release);
  }
  const closed = new AbortController();
  ctx.req.on('close', () => closed.abort());
  // A run that needs a person's approval answers 202 `requires_action` then, rather than when the wait is over.
  // Waiting for the run is not the API's work: the request gives its place back meanwhile.
  const run = await idleWhile(ctx, () =>
    runWhenEnded(deps, projectId, runId, body.wait === false ? 0 : WAIT_MS, closed.signal, { orAsking: true }),
  );
  respond(ctx, { status: isFinished(run.status) ? 200 : 202, body: await presentRunOf(deps, run) });
}
