/**
 * A remote A2A agent as a tool: the model sends it a message, the agent's task is followed to its end (asked
 * for with tasks/get, at growing intervals), and its artifacts, or its last message, are the result. The task is
 * remembered on the run's step as soon as it exists, so a retried call follows it instead of starting another;
 * a run cancelled meanwhile cancels it (tasks/cancel). An agent that reports its cost (COST_EXTENSION) has it
 * charged to the calling run.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Role, TaskState, type AgentCard, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ServiceParameters, withA2AExtensions, type Client } from '@a2a-js/sdk/client';
import type { ToolSpec } from '../models/messages.js';
import { storableText } from '../models/storable-text.js';
import { depthProblem } from '../records/json-depth.js';
import type { RemoteTask } from '../records/run-steps.js';

export type { RemoteTask } from '../records/run-steps.js';
import { A2A_DEFAULT_TIMEOUT_MS, A2A_MAX_TIMEOUT_MS, type A2aToolDefinition } from './definitions.js';
import { agentCardOf, clientFor, COST_EXTENSION, reportsCost } from './a2a-client.js';
import { ResponseTooLargeError } from './guarded-fetch.js';
import { MAX_DESCRIPTION_CHARS } from './offer-limits.js';
import { PrivateTargetError, type Reach } from './network-guard.js';
import { isPassingConnectionFailure, ToolUnavailableError, type RemoteCharge, type ToolResult } from './outcomes.js';

/** What a call knows of its step: the task an earlier attempt started, and where to keep the one it starts. */
export interface RemoteTaskMemory {
  previous: RemoteTask | null;
  remember(task: RemoteTask): Promise<void>;
}

const PARAMETERS = {
  type: 'object',
  properties: { message: { type: 'string', minLength: 1, maxLength: 100_000, description: 'What to ask or tell the agent.' } },
  required: ['message'],
  additionalProperties: false,
};
// How much of the task's answer is shown to the model; the rest is cut with a note.
const MAX_RESULT_CHARS = 65_536;
// Asking for the task: first after this long, then twice as long each time, up to the most.
const FIRST_POLL_MS = 200;
const MAX_POLL_MS = 2_000;
// How long cancelling the task may hold up the end of a cancelled call.
const CANCEL_MS = 5_000;

const ENDED = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);
const INTERRUPTED = new Set([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]);

const timeoutOf = (def: A2aToolDefinition) => Math.min(def.timeout_ms ?? A2A_DEFAULT_TIMEOUT_MS, A2A_MAX_TIMEOUT_MS);

/**
 * The tool as the model sees it: one message in, described by the definition or else by the card. A card that
 * cannot be read (refused, too large, not a card) leaves the tool offered, so that its call says why; an agent
 * that is down for now is asked again later (ToolUnavailableError).
 */
export async function a2aToolSpec(def: A2aToolDefinition, reach: Reach & { runId?: string }): Promise<ToolSpec> {
  let described = def.description;
  if (described === undefined) {
    try {
      const card = await agentCardOf(def, reach);
      described = [card.name, card.description].filter(Boolean).join(': ');
    } catch (err) {
      if (reach.signal.aborted) throw reach.signal.reason;
      if (err instanceof ToolUnavailableError) throw err;
      if (isPassingConnectionFailure(err))
        throw new ToolUnavailableError(`the agent of ${def.name} could not be reached: ${(err as Error).message}`, undefined, {
          cause: err,
        });
      described = '';
    }
  }
  return { name: def.name, description: storableText(described.slice(0, MAX_DESCRIPTION_CHARS)), parameters: PARAMETERS };
}

/** Sends the model's message (or, on a retry, follows the task an earlier attempt started) and answers with the task's result. */
export async function callA2aTool(
  def: A2aToolDefinition,
  args: Record<string, unknown>,
  reach: Reach & { runId?: string },
  memory: RemoteTaskMemory,
  idempotencyKey?: string,
): Promise<ToolResult> {
  const text = args.message;
  if (typeof text !== 'string' || text.trim() === '' || text.length > 100_000)
    return { content: 'The arguments must be {"message": "…"}, a message of 1 to 100000 characters.', is_error: true };
  const timeout = AbortSignal.timeout(timeoutOf(def));
  const signal = AbortSignal.any([reach.signal, timeout]);
  let task: RemoteTask | null = memory.previous;
  let client: Client | undefined;
  try {
    const card = await agentCardOf(def, { ...reach, signal });
    client = await clientFor(def, card, { ...reach, signal });
    const options = { signal, serviceParameters: requestedExtensions(card) };
    let current: Task | null = null;
    if (!task) {
      const sent = await client.sendMessage(
        {
          tenant: '',
          message: userMessage(text, idempotencyKey),
          configuration: {
            acceptedOutputModes: ['text/plain', 'application/json'],
            taskPushNotificationConfig: undefined,
            returnImmediately: true,
          },
          metadata: undefined,
        },
        options,
      );
      if (!isTask(sent)) return { content: bounded(partsText(sent.parts)), is_error: false };
      const unkept = unkeptIdOf(sent);
      if (unkept) {
        await cancelTask(client, { task_id: sent.id, context_id: sent.contextId });
        return { content: `The agent of ${def.name} answered with a task whose ${unkept}; the task was cancelled`, is_error: true };
      }
      current = sent;
      task = { task_id: sent.id, context_id: sent.contextId };
      await memory.remember(task);
    }
    for (let wait = FIRST_POLL_MS; !current || !settled(current); wait = Math.min(wait * 2, MAX_POLL_MS)) {
      if (current) await delay(wait, undefined, { signal });
      current = await client.getTask({ tenant: '', id: task.task_id }, options);
    }
    return outcomeOf(def, current, card);
  } catch (err) {
    if (task && client && (reach.signal.aborted || timeout.aborted)) await cancelTask(client, task);
    if (reach.signal.aborted) throw reach.signal.reason;
    if (timeout.aborted)
      return { content: `${def.name} did not finish its task within ${timeoutOf(def)} ms; the task was cancelled`, is_error: true };
    if (err instanceof ToolUnavailableError) throw err;
    if (err instanceof PrivateTargetError) return { content: `The request was refused: ${err.message}`, is_error: true };
    if (err instanceof ResponseTooLargeError)
      return { content: `The agent of ${def.name} answered with more than ${err.maxBytes} bytes; the answer was not read`, is_error: true };
    if (isPassingConnectionFailure(err))
      throw new ToolUnavailableError(`the agent of ${def.name} could not be reached: ${(err as Error).message}`, undefined, { cause: err });
    return { content: `The agent of ${def.name} answered: ${(err as Error).message}`, is_error: true };
  }
}

/** The cost extension, asked for (A2A-Extensions) of an agent whose card declares it. */
function requestedExtensions(card: AgentCard): ServiceParameters | undefined {
  return reportsCost(card) ? ServiceParameters.create(withA2AExtensions(COST_EXTENSION)) : undefined;
}

function userMessage(text: string, idempotencyKey: string | undefined): Message {
  return {
    // The same for every attempt at one call, so that an agent that keeps message ids can tell a retry.
    messageId: idempotencyKey ?? crypto.randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const isTask = (result: Message | Task): result is Task => 'status' in result && 'artifacts' in result;

// The most characters of a task's id or context id that the step keeps (A2A's are UUIDs).
const MAX_TASK_ID_CHARS = 1_024;

/**
 * Why the task's ids cannot be kept on the step, which follows the task by them: text PostgreSQL cannot hold
 * (storable-text.ts), which changed would name another task, or an id too long to keep. Null when they can be.
 */
function unkeptIdOf(task: Task): string | null {
  for (const [what, id] of [
    ['id', task.id],
    ['context id', task.contextId],
  ] as const) {
    if (storableText(id) !== id) return `${what} cannot be kept: it holds the NUL character or half of a surrogate pair`;
    if (id.length > MAX_TASK_ID_CHARS) return `${what} cannot be kept: it is longer than ${MAX_TASK_ID_CHARS} characters`;
  }
  return null;
}

const settled = (task: Task) => ENDED.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED) || INTERRUPTED.has(task.status!.state);

/** Asks the agent to cancel the task, waiting briefly; an agent that cannot is left to end it itself. */
async function cancelTask(client: Client, task: RemoteTask): Promise<void> {
  await client
    .cancelTask({ tenant: '', id: task.task_id, metadata: undefined }, { signal: AbortSignal.timeout(CANCEL_MS) })
    .catch(() => undefined);
}

/** A settled task as the model reads it, with what it cost when the agent said. */
function outcomeOf(def: A2aToolDefinition, task: Task, card: AgentCard): ToolResult {
  const state = task.status!.state;
  const said = task.status?.message ? partsText(task.status.message.parts) : '';
  const charge = reportsCost(card) ? chargeOf(task) : undefined;
  const remote = { ...(charge ? { charge } : {}) };
  if (state === TaskState.TASK_STATE_COMPLETED) {
    const artifacts = task.artifacts.map((a) => partsText(a.parts)).filter(Boolean);
    const answer = artifacts.length > 0 ? artifacts.join('\n\n') : said || lastAgentText(task);
    return { content: bounded(answer), is_error: false, ...remote };
  }
  const why = said ? `: ${said}` : '';
  const results: Partial<Record<TaskState, string>> = {
    [TaskState.TASK_STATE_FAILED]: `The task of ${def.name} failed${why}`,
    [TaskState.TASK_STATE_REJECTED]: `${def.name} declined the task${why}`,
    [TaskState.TASK_STATE_CANCELED]: `The task of ${def.name} was cancelled${why}`,
    [TaskState.TASK_STATE_INPUT_REQUIRED]: `${def.name} needs more input to go on, which this tool cannot give${why}`,
    [TaskState.TASK_STATE_AUTH_REQUIRED]: `${def.name} needs an authorization to go on, which this tool cannot give${why}`,
  };
  return { content: bounded(results[state] ?? `The task of ${def.name} ended in an unknown state`), is_error: true, ...remote };
}

function lastAgentText(task: Task): string {
  const last = [...task.history].reverse().find((m) => m.role === Role.ROLE_AGENT);
  return last ? partsText(last.parts) : '';
}

/** Text parts as they are, data as JSON, files described: the model cannot take their bytes here. */
function partsText(parts: Part[]): string {
  return parts
    .map((part) => {
      const content = part.content;
      if (!content) return '';
      if (content.$case === 'text') return content.value;
      if (content.$case === 'data') {
        const tooDeep = depthProblem(content.value);
        return tooDeep ? `[data that ${tooDeep}, not shown]` : JSON.stringify(content.value);
      }
      if (content.$case === 'url')
        return `[file: ${part.filename || content.value}${part.mediaType ? `, ${part.mediaType}` : ''}, not shown]`;
      return `[file: ${part.filename || 'unnamed'}${part.mediaType ? `, ${part.mediaType}` : ''}, ${content.value.length} bytes, not shown]`;
    })
    .filter(Boolean)
    .join('\n');
}

// A cost in USD as the ledger takes it: a plain decimal, at most 12 digits either side of the point.
const COST = /^\d{1,12}(\.\d{1,12})?$/;

/** What the agent reported the task cost (COST_EXTENSION), when it reported it in a shape that can be charged. */
function chargeOf(task: Task): RemoteCharge | undefined {
  const reported: unknown = task.metadata?.[COST_EXTENSION];
  if (!reported || typeof reported !== 'object') return undefined;
  const { run_id, cost_usd, input_tokens, output_tokens } = reported as Record<string, unknown>;
  // A number as JSON wrote it (0.0125), or, past what a plain decimal shows (1e-7), to 12 places.
  const cost = typeof cost_usd === 'number' && Number.isFinite(cost_usd) ? plainDecimal(cost_usd) : cost_usd;
  const tokens = (n: unknown) => (Number.isSafeInteger(n) && (n as number) >= 0 ? (n as number) : 0);
  if (typeof cost !== 'string' || !COST.test(cost)) return undefined;
  return {
    remoteRunId: typeof run_id === 'string' ? storableText(run_id.slice(0, 128)) : null,
    costUsd: cost,
    inputTokens: tokens(input_tokens),
    outputTokens: tokens(output_tokens),
  };
}

function plainDecimal(n: number): string {
  const text = String(n);
  return COST.test(text) ? text : n.toFixed(12);
}

function bounded(text: string): string {
  if (text.length <= MAX_RESULT_CHARS) return text;
  return `${text.slice(0, MAX_RESULT_CHARS)}\n\n[The answer was longer than ${MAX_RESULT_CHARS} characters; only the first ${MAX_RESULT_CHARS} are shown.]`;
}
