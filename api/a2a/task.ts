/**
 * A run as an A2A Task: the task's id is the run's, its context the run's thread, its history the run's
 * input (and its answer once it has one), its one artifact the run's output text. Every task carries what
 * the run has cost so far, under the cost extension's key.
 */
import { Role, TaskState, type Artifact, type Message, type Part, type Task, type TaskStatus } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { isFinished, type InputMessage, type RunRecord } from '../../records/runs.js';

/** The cost extension: declared in every card, and its value in every task's metadata. */
export const COST_EXTENSION_URI = 'https://agentplane.io/a2a/extensions/cost/v1';

export interface CostMetadata {
  run_id: string;
  cost_usd: number;
  input_tokens: number;
  output_tokens: number;
}

/** The run's ledger as the cost extension reports it. */
export function costOf(run: Pick<RunRecord, 'id' | 'cost' | 'input_tokens' | 'output_tokens'>): Record<string, CostMetadata> {
  return {
    [COST_EXTENSION_URI]: { run_id: run.id, cost_usd: Number(run.cost), input_tokens: run.input_tokens, output_tokens: run.output_tokens },
  };
}

/**
 * The task's state. A run waiting for a person's approval of a tool call is `auth-required`: it goes on by
 * itself once the approval is decided, out of band (the REST API or the console), with no further message.
 */
export function taskStateOf(run: Pick<RunRecord, 'status' | 'pending_approvals'>): TaskState {
  switch (run.status) {
    case 'queued':
      return TaskState.TASK_STATE_SUBMITTED;
    case 'in_progress':
      return run.pending_approvals > 0 ? TaskState.TASK_STATE_AUTH_REQUIRED : TaskState.TASK_STATE_WORKING;
    case 'completed':
      return TaskState.TASK_STATE_COMPLETED;
    case 'failed':
      return TaskState.TASK_STATE_FAILED;
    case 'cancelled':
      return TaskState.TASK_STATE_CANCELED;
    default:
      return TaskState.TASK_STATE_WORKING;
  }
}

export const isTerminalState = (state: TaskState) =>
  state === TaskState.TASK_STATE_COMPLETED ||
  state === TaskState.TASK_STATE_FAILED ||
  state === TaskState.TASK_STATE_CANCELED ||
  state === TaskState.TASK_STATE_REJECTED;

export const textPart = (text: string): Part => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});

/** A task's context: the run's thread; a run made without one (through the REST API) is a context of its own. */
export const contextIdOf = (run: Pick<RunRecord, 'id' | 'thread_id'>) => run.thread_id ?? run.id;

function message(run: RunRecord, messageId: string, role: Role, text: string): Message {
  return {
    messageId,
    contextId: contextIdOf(run),
    taskId: run.id,
    role,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

// An attachment's parts are the model's view of a file, not the client's words: only the text is the message.
const textOf = (m: InputMessage) =>
  typeof m.content === 'string' ? m.content : m.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');

/** The run's answer, once it has ended with one. */
function answerOf(run: RunRecord): Message | undefined {
  if (run.status === 'completed') return message(run, `${run.id}-output`, Role.ROLE_AGENT, run.output_text);
  if (run.status === 'failed' && run.error) return message(run, `${run.id}-error`, Role.ROLE_AGENT, run.error.message);
  return undefined;
}

export function statusOf(run: RunRecord): TaskStatus {
  const at = run.completed_at ?? run.started_at ?? run.created_at;
  return { state: taskStateOf(run), message: answerOf(run), timestamp: at.toISOString() };
}

export function outputArtifactOf(run: RunRecord): Artifact {
  return {
    artifactId: `${run.id}-output`,
    name: 'output',
    description: "The run's answer.",
    parts: [textPart(run.output_text)],
    metadata: undefined,
    extensions: [],
  };
}

/** The most `historyLength` may be: the protocol types it as an int32. */
const MAX_HISTORY_LENGTH = 2 ** 31 - 1;

/** `historyLength` as a request gives it (absent, or a whole number from 0 up); RequestMalformedError otherwise. */
export function checkedHistoryLength(historyLength: number | undefined): number | undefined {
  if (historyLength === undefined) return undefined;
  if (!Number.isInteger(historyLength) || historyLength < 0 || historyLength > MAX_HISTORY_LENGTH)
    throw new RequestMalformedError(`historyLength must be a whole number from 0 to ${MAX_HISTORY_LENGTH}.`);
  return historyLength;
}

/**
 * The task as it stands. `historyLength` as the protocol reads it: absent, the whole history; 0, none; N, the
 * newest N messages.
 */
export function presentTask(run: RunRecord, historyLength?: number): Task {
  const history = run.input.map((m, i) =>
    message(run, `${run.id}-input-${i}`, m.role === 'user' ? Role.ROLE_USER : Role.ROLE_AGENT, textOf(m)),
  );
  const answer = run.status === 'completed' ? answerOf(run) : undefined;
  if (answer) history.push(answer);
  const kept = historyLength === undefined ? history : historyLength <= 0 ? [] : history.slice(-historyLength);
  return {
    id: run.id,
    contextId: contextIdOf(run),
    status: statusOf(run),
    artifacts: isFinished(run.status) && run.output_text !== '' ? [outputArtifactOf(run)] : [],
    history: kept,
    metadata: costOf(run),
  };
}
