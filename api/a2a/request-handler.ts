/**
 * The A2A operations of one agent or network, over its runs: sending a message starts a run (through the
 * same admission as `POST /v1/agents/{id}/run`: budgets, limits, concurrency, idempotency), a task is a run,
 * a context is a thread. The SDK's JSON-RPC transports (1.0 and 0.3) parse, dispatch and answer; this class
 * is what they dispatch to, once per request.
 */
import { idleWhile } from '../fair-admission.js';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import {
  ContentTypeNotSupportedError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { ApiContext, ApiDeps } from '../context.js';
import { callerOf } from '../context.js';
import { ApiError, PermissionError, toApiError } from '../errors.js';
import { hasScope } from '../middleware/auth.js';
import { findRun, isFinished, type RunRecord } from '../../records/runs.js';
import { findThread } from '../../records/threads.js';
import { startRun } from '../routes/runs/create.js';
import { cancelRunWorkflow, runWorkflowId } from '../../workflows/runs/client.js';
import { networkRunWorkflowId } from '../../workflows/networks/client.js';
import { endRunNeverStarted } from '../../records/unstarted-runs.js';
import { runWhenEnded } from '../routes/runs/run-log.js';
import { checkedHistoryLength, presentTask } from './task.js';
import { followTask } from './task-events.js';
import { listTasksOf } from './task-list.js';
import { messageInputOf } from './message-input.js';
import { MessageFiles } from './message-files.js';

/** What the endpoint runs: an agent or a network of the caller's project. */
export interface A2ATarget {
  kind: 'agent' | 'network';
  id: string;
}

/**
 * How long a blocking `SendMessage` waits for its task to end or to need a decision: longer than any proxy
 * keeps a quiet request open is no use. A task still working then is answered as it stands, to be followed
 * with `GetTask` or `SubscribeToTask`.
 */
export const BLOCKING_WAIT_MS = 60_000;
const CANCEL_WAIT_MS = 10_000;
// A message id becomes part of an idempotency key of 255 at most.
const MAX_MESSAGE_ID_CHARS = 200;

/**
 * A refusal the API answers at the HTTP level (401, 403, 409 when the agent's concurrency policy refuses a
 * second run, 429 with Retry-After, 503 with Retry-After), not as a JSON-RPC error of the operation: the
 * request was not served at all, and the client should act on the status.
 */
export class HttpRefusal extends Error {
  constructor(readonly apiError: ApiError) {
    super(apiError.message);
  }
}

/** The API's refusals in the protocol's terms. */
function protocolError(err: unknown): unknown {
  if (err instanceof HttpRefusal) return err;
  const apiError = toApiError(err);
  if (!apiError) return err;
  if (apiError.code === 'idempotency_key_reused') {
    return new RequestMalformedError('This messageId was sent before with a different message; give each message its own id.');
  }
  // A file part whose content is not a type the platform takes (or not the type it declares).
  if (apiError.status === 415) return new ContentTypeNotSupportedError(apiError.message);
  if ([401, 403, 409, 429].includes(apiError.status) || apiError.status >= 500) return new HttpRefusal(apiError);
  return new RequestMalformedError(apiError.param ? `${apiError.message} (${apiError.param})` : apiError.message);
}

export class RunTaskHandler implements A2ARequestHandler {
  /** A refusal the transport answered as an operation's error, which the endpoint answers at the HTTP level instead. */
  refusal: ApiError | null = null;
  /** Aborted when the client goes away: waits end, and a stream stops following its task (which goes on). */
  readonly closed = new AbortController();

  constructor(
    private readonly ctx: ApiContext,
    private readonly deps: ApiDeps,
    private readonly target: A2ATarget,
    private readonly card: AgentCard,
  ) {
    ctx.res.on('close', () => this.closed.abort());
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new UnsupportedOperationError('This agent has no extended card: its card is the whole of it.');
  }

  sendMessage(params: SendMessageRequest): Promise<Task> {
    return this.guard(async () => {
      const historyLength = checkedHistoryLength(params.configuration?.historyLength);
      const { run } = await this.startRun(params, false);
      const wait = params.configuration?.returnImmediately ? 0 : BLOCKING_WAIT_MS;
      const now = await idleWhile(this.ctx, () =>
        runWhenEnded(this.deps, run.project_id, run.id, wait, this.closed.signal, { orAsking: true }),
      );
      return presentTask(now, historyLength);
    });
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const { run, release, historyLength } = await this.guard(async () => {
      const historyLength = checkedHistoryLength(params.configuration?.historyLength);
      const started = await this.startRun(params, true);
      return { run: started.run, release: started.release!, historyLength };
    });
    yield* followTask(this.deps, run, release, this.closed.signal, historyLength);
  }

  getTask(params: GetTaskRequest): Promise<Task> {
    return this.guard(async () => {
      const historyLength = checkedHistoryLength(params.historyLength);
      return presentTask(await this.taskRun(params.id), historyLength);
    });
  }

  listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    return this.guard(() => listTasksOf(this.deps.db, callerOf(this.ctx).projectId, this.target, params));
  }

  cancelTask(params: CancelTaskRequest): Promise<Task> {
    return this.guard(async () => {
      const run = await this.taskRun(params.id);
      if (isFinished(run.status)) throw new TaskNotCancelableError(`Task ${run.id} has already ended (${run.status}).`);
      const workflowId = run.network_id ? networkRunWorkflowId(run.id) : runWorkflowId(run.id);
      // Bounded by the connection's deadline for a call (workflows/call-deadline.ts).
      if (!(await cancelRunWorkflow(this.deps.temporal, run.id, workflowId))) await endRunNeverStarted(this.deps.db, run.id);
      this.ctx.state.auditTargetId = run.id;
      return presentTask(
        await idleWhile(this.ctx, () => runWhenEnded(this.deps, run.project_id, run.id, CANCEL_WAIT_MS, this.closed.signal)),
      );
    });
  }

  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const { run, release } = await this.guard(async () => {
      const found = await this.taskRun(params.id);
      if (isFinished(found.status))
        throw new UnsupportedOperationError(`Task ${found.id} has ended (${found.status}): read it with GetTask.`);
      return { run: found, release: this.deps.streamSlots.take(callerOf(this.ctx).apiKeyId, this.ctx.state.place) };
    });
    yield* followTask(this.deps, run, release, this.closed.signal);
  }

  createTaskPushNotificationConfig(_params: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    return Promise.reject(this.noPush());
  }

  getTaskPushNotificationConfig(_params: GetTaskPushNotificationConfigRequest): Promise<TaskPushNotificationConfig> {
    return Promise.reject(this.noPush());
  }

  listTaskPushNotificationConfigs(_params: ListTaskPushNotificationConfigsRequest): Promise<ListTaskPushNotificationConfigsResponse> {
    return Promise.reject(this.noPush());
  }

  deleteTaskPushNotificationConfig(_params: DeleteTaskPushNotificationConfigRequest): Promise<void> {
    return Promise.reject(this.noPush());
  }

  private noPush() {
    return new PushNotificationNotSupportedError(
      'This agent sends no push notifications: follow a task with SendStreamingMessage or GetTask.',
    );
  }

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      const error = protocolError(err);
      if (error instanceof HttpRefusal) this.refusal = error.apiError;
      throw error;
    }
  }

  /** The run that is task `id`, if it is this agent's (or network's) and in the caller's project. */
  private async taskRun(id: string): Promise<RunRecord> {
    if (id === '') throw new RequestMalformedError('The task `id` is required.');
    const run = await findRun(this.deps.db, callerOf(this.ctx).projectId, id);
    const mine =
      run && (this.target.kind === 'agent' ? run.agent_id === this.target.id && !run.parent_run_id : run.network_id === this.target.id);
    if (!run || !mine) throw new TaskNotFoundError(`No task with id '${id}'.`);
    return run;
  }

  /** Admits the message as a new run of this agent (or network); a streamed one holds an event stream slot, given back as `release`. */
  private async startRun(params: SendMessageRequest, stream: boolean): Promise<{ run: RunRecord; release?: () => void }> {
    const { message } = params;
    const { text, files } = messageInputOf(message);
    const caller = callerOf(this.ctx);
    const { projectId } = caller;
    if (params.configuration?.taskPushNotificationConfig) throw this.noPush();
    // A file part is an upload attached to the run: the key needs what both take through the REST API.
    for (const scope of files.length > 0 ? (['files:write', 'files:read'] as const) : []) {
      if (!hasScope(caller, scope)) throw PermissionError(scope);
    }
    if (message!.taskId) {
      // A task is one run, which takes no further input once it has begun: a new message is a new task, in the same context.
      const run = await this.taskRun(message!.taskId);
      throw new UnsupportedOperationError(
        `Task ${run.id} takes no further messages; send the message without taskId and with contextId '${run.thread_id ?? ''}' to continue the conversation.`,
      );
    }
    if (message!.messageId.length > MAX_MESSAGE_ID_CHARS)
      throw new RequestMalformedError(`messageId is over ${MAX_MESSAGE_ID_CHARS} characters.`);
    const contextId = message!.contextId;
    if (contextId && !(await findThread(this.deps.db, projectId, contextId))) {
      throw new RequestMalformedError(`No context '${contextId}': continue a context this server gave, or send no contextId to begin one.`);
    }
    const body = {
      input: text,
      ...(contextId ? { thread_id: contextId } : {}),
      // A conversation's messages are taken in turn, as a client that does not wait for the last answer expects.
      on_thread_busy: 'wait' as const,
      stream,
      wait: true,
    };
    const attachments = files.length > 0 ? await MessageFiles.stage(this.ctx, this.deps, files) : null;
    const started = await startRun(this.ctx, this.deps, this.target.kind, this.target.id, body, {
      // The protocol's way to spot a message sent twice: the same messageId (with the same content) is the same task.
      idempotencyKey: message!.messageId ? `a2a:${this.target.id}:${message!.messageId}` : undefined,
      identity: { ...body, stream: undefined, wait: undefined, ...(attachments ? { files: attachments.identity() } : {}) },
      newThread: !contextId,
      ...(attachments ? { files: { record: (tx) => attachments.record(tx), extract: () => attachments.extract() } } : {}),
    }).catch(async (err: unknown) => {
      await attachments?.discard();
      throw err;
    });
    if (started.replayed) await attachments?.discard();
    this.ctx.state.auditTargetId = started.runId;
    const run = await findRun(this.deps.db, projectId, started.runId);
    if (!run) throw new Error(`run ${started.runId} vanished`);
    return { run, release: started.release };
  }
}
