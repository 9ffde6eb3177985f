/**
 * What admits a run, wherever it is asked for (the run endpoints, the MCP and A2A servers, a schedule's time):
 * the request's checks, the target's concurrency policy under its row lock, and the start of the admitted
 * run's workflow. Limits and budgets are `refuseOverLimits` (limits.ts), in the same transaction.
 */
import type { ApiDeps, Caller } from '../../context.js';
import { ConflictError, InvalidRequestError, NotFoundError, PermissionError } from '../../errors.js';
import { hasScope } from '../../middleware/auth.js';
import type { Input } from '../../validation.js';
import { findAgent } from '../../../records/agents.js';
import { findNetwork } from '../../../records/networks.js';
import type { Queryable } from '../../../records/db.js';
import { attachmentsOf } from '../../../records/files.js';
import { activeRunsOf, recordRunWorkflowStarted, requestInterrupts, type InputMessage, type RunTarget } from '../../../records/runs.js';
import { interruptRun, startRunWorkflow } from '../../../workflows/runs/client.js';
import { startNetworkRunWorkflow } from '../../../workflows/networks/client.js';
import { checkModel } from '../agents/definition.js';

/** What is run, as the run needs it: its current version, concurrency, model and step budget. */
export interface Runnable {
  target: RunTarget;
  concurrency: 'allow' | 'reject' | 'enqueue' | 'interrupt';
  model: string;
  maxSteps: number;
  /** The cap on each of its runs' cost (a network's covers the hops), decimal USD; null for none. */
  maxCostUsd: string | null;
  /** A network's dedicated workers' task queue; the shared one when unset. */
  taskQueue?: string;
  /** The agents whose model calls the run is charged for: the agent, or the network's members (its hops). */
  agentIds: string[];
}

export async function runnableOf(
  db: Queryable,
  projectId: string,
  kind: 'agent' | 'network',
  id: string,
  lock = false,
  param = 'id',
): Promise<Runnable> {
  if (kind === 'agent') {
    const agent = await findAgent(db, projectId, id, { lock });
    if (!agent) throw NotFoundError('agent', id, param);
    return {
      target: { agentId: id, agentVersion: agent.version },
      concurrency: agent.concurrency,
      model: agent.model,
      maxSteps: agent.max_steps,
      maxCostUsd: agent.max_cost_usd,
      agentIds: [id],
    };
  }
  const network = await findNetwork(db, projectId, id, { lock });
  if (!network) throw NotFoundError('network', id, param);
  // A network run's own model calls are its supervisor's; its step budget is its hop budget.
  return {
    target: { networkId: id, networkVersion: network.version },
    concurrency: network.concurrency,
    model: network.router.model ?? 'none',
    maxSteps: network.max_hops,
    maxCostUsd: network.max_cost_usd,
    taskQueue: network.worker_pool ?? undefined,
    agentIds: network.members,
  };
}

/** The parts of a run request every way of asking for a run shares. */
type RunRequestParts = Pick<Input<'runAgent'>['body'], 'input' | 'file_ids' | 'model'>;

/** A run's `input` as the messages it is: a string is the user's message; a list needs one of the user's. */
export function inputMessagesOf(input: RunRequestParts['input'], param = 'input'): InputMessage[] {
  const messages: InputMessage[] = typeof input === 'string' ? [{ role: 'user', content: input }] : input;
  if (messages.every((m) => m.role !== 'user'))
    throw InvalidRequestError('invalid_input', `\`${param}\` needs at least one user message.`, param);
  return messages;
}

/**
 * Refuses attachments the caller may not read (403), or that are not files of its project (404, naming the
 * first such id's field, `paramOf` it).
 */
export async function checkAttachments(
  db: Queryable,
  caller: Caller,
  fileIds: string[],
  paramOf: (fileId: string) => string,
): Promise<void> {
  // Attaching a file hands its content to the model and back in the answer: reading it, by another road.
  if (fileIds.length > 0 && !hasScope(caller, 'files:read')) throw PermissionError('files:read');
  const files = await attachmentsOf(db, caller.projectId, fileIds);
  const unknown = fileIds.find((fileId) => !files.some((f) => f.id === fileId));
  if (unknown !== undefined) throw NotFoundError('file', unknown, paramOf(unknown));
}

/**
 * Checks a run request before anything is written: the target is the project's, the model is known, the files are
 * the project's (and the caller may read them), and the input has a user message. Answers the input as messages.
 * An error names the field at fault: the target's as `targetParam`, the request's under `under` (`run.` in a schedule).
 */
export async function checkRunRequest(
  deps: Pick<ApiDeps, 'db' | 'models'>,
  caller: Caller,
  kind: 'agent' | 'network',
  targetId: string,
  body: RunRequestParts,
  { targetParam = 'id', under = '' }: { targetParam?: string; under?: string } = {},
): Promise<{ input: InputMessage[]; fileIds: string[] }> {
  await runnableOf(deps.db, caller.projectId, kind, targetId, false, targetParam);
  if (body.model !== undefined) await checkModel(deps.models, body.model, `${under}model`);
  const fileIds = body.file_ids ?? [];
  await checkAttachments(deps.db, caller, fileIds, (fileId) => `${under}file_ids.${fileIds.indexOf(fileId)}`);
  const input = inputMessagesOf(body.input, `${under}input`);
  return { input, fileIds };
}

/**
 * Locks the agent's (or network's) row and applies its concurrency policy, so two runs cannot both find it idle:
 * `reject` answers 409 while a run is going; `interrupt` names the runs to end. `enqueue` runs wait their turn in
 * the worker.
 */
export async function lockUnderConcurrency(
  tx: Queryable,
  projectId: string,
  kind: 'agent' | 'network',
  targetId: string,
): Promise<{ current: Runnable; interrupted: string[] }> {
  const current = await runnableOf(tx, projectId, kind, targetId, true);
  if (current.concurrency !== 'reject' && current.concurrency !== 'interrupt') return { current, interrupted: [] };
  // `reject` needs the oldest only, however many runs were queued before the agent came to reject.
  const active = await activeRunsOf(tx, targetId, current.concurrency === 'reject' ? 1 : null);
  if (current.concurrency === 'reject' && active.length > 0) {
    throw ConflictError(
      `${kind}_busy`,
      `The ${kind} ${targetId} already has a run in progress (${active[0]!.id}) and its concurrency is reject.`,
    );
  }
  if (current.concurrency !== 'interrupt') return { current, interrupted: [] };
  // Marked with the run that replaces them: should Temporal not take their cancellation now, maintenance owes it.
  const interrupted = active.map((r) => r.id);
  await requestInterrupts(tx, interrupted);
  return { current, interrupted };
}

/** Where a step that failed but need not fail the request is told: the request's log, or an activity's. */
export type Warn = (details: Record<string, unknown>, message: string) => void;

/**
 * Ends the runs an `interrupt` run replaces. One that cannot be reached now (Temporal unreachable) is logged and
 * left marked: the maintenance round cancels it once Temporal is back.
 */
export async function interruptRuns(
  deps: Pick<ApiDeps, 'db' | 'temporal'>,
  kind: 'agent' | 'network',
  runIds: string[],
  warn: Warn,
): Promise<void> {
  // Each Temporal call waits no longer than the connection's deadline (workflows/call-deadline.ts).
  for (const earlier of runIds) {
    await interruptRun(deps.temporal, deps.db, { id: earlier, network: kind === 'network' }).catch((err) =>
      warn({ err, run_id: earlier }, 'could not interrupt the earlier run now; the maintenance schedule will'),
    );
  }
}

/** Starts an admitted run's workflow; a start that fails (Temporal down) is made later by the maintenance schedule. */
export async function startAdmittedRun(
  deps: Pick<ApiDeps, 'db' | 'temporal'>,
  kind: 'agent' | 'network',
  runId: string,
  projectId: string,
  taskQueue: string | undefined,
  warn: Warn,
): Promise<void> {
  await (
    kind === 'agent'
      ? startRunWorkflow(deps.temporal, runId, projectId)
      : startNetworkRunWorkflow(deps.temporal, runId, projectId, taskQueue)
  )
    .then(() => recordRunWorkflowStarted(deps.db, runId))
    .catch((err) => warn({ err, run_id: runId }, 'run start failed or was not recorded; the maintenance schedule will start it'));
}
