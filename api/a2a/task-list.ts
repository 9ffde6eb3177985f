/**
 * ListTasks: the tasks of one agent (or network) in the caller's project, the one whose status changed last
 * first, filtered by context, state and status time, and paged by an opaque token that holds where the last
 * page ended (so a task that changes meanwhile is not given twice on later pages).
 */
import { TaskState, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { Queryable } from '../../records/db.js';
import type { RunStatus } from '../../records/runs.js';
import { countTaskRuns, taskRunsPage, type TaskRunPosition, type TaskRunQuery } from '../../records/run-tasks.js';
import { checkedHistoryLength, presentTask } from './task.js';

/** As the protocol says: 50 when not asked, at most 100. */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;
/** `totalSize` counts this far and no further, so that counting costs the same for any list. */
export const MAX_COUNTED_TASKS = 10_000;

// A task's state as the run statuses the API shows (taskStateOf the other way); a state no run is in matches none.
const RUN_STATUSES: Record<number, RunStatus[]> = {
  [TaskState.TASK_STATE_SUBMITTED]: ['queued'],
  [TaskState.TASK_STATE_WORKING]: ['in_progress'],
  [TaskState.TASK_STATE_AUTH_REQUIRED]: ['requires_action'],
  [TaskState.TASK_STATE_COMPLETED]: ['completed'],
  [TaskState.TASK_STATE_FAILED]: ['failed'],
  [TaskState.TASK_STATE_CANCELED]: ['cancelled'],
  [TaskState.TASK_STATE_INPUT_REQUIRED]: [],
  [TaskState.TASK_STATE_REJECTED]: [],
};

// RFC 3339, as ProtoJSON writes a Timestamp.
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;
const MAX_TOKEN_CHARS = 200;

const invalidToken = () =>
  new RequestMalformedError('pageToken is not one this server gave: pass the nextPageToken of an earlier ListTasks.');

export function encodePageToken(position: TaskRunPosition): string {
  return Buffer.from(JSON.stringify([position.micros, position.id])).toString('base64url');
}

export function decodePageToken(token: string): TaskRunPosition {
  if (token.length > MAX_TOKEN_CHARS) throw invalidToken();
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalidToken();
  }
  if (!Array.isArray(decoded) || decoded.length !== 2) throw invalidToken();
  const [micros, id] = decoded as unknown[];
  if (typeof micros !== 'string' || !/^-?\d{1,19}$/.test(micros) || typeof id !== 'string' || !/^run_\w{1,64}$/.test(id)) {
    throw invalidToken();
  }
  return { micros, id };
}

function pageSizeOf(params: ListTasksRequest): number {
  const size = params.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) {
    throw new RequestMalformedError(`pageSize must be a whole number from 1 to ${MAX_PAGE_SIZE}.`);
  }
  return size;
}

function statusesOf(state: TaskState): RunStatus[] | undefined {
  if (state === TaskState.TASK_STATE_UNSPECIFIED) return undefined;
  const statuses = RUN_STATUSES[state];
  if (!statuses) throw new RequestMalformedError('status must be a TaskState, such as TASK_STATE_WORKING.');
  return statuses;
}

function changedSinceOf(text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const at = new Date(text);
  if (!TIMESTAMP.test(text) || Number.isNaN(at.getTime())) {
    throw new RequestMalformedError('statusTimestampAfter must be an RFC 3339 time, such as 2026-01-31T09:00:00Z.');
  }
  return at;
}

/** The page of tasks `params` asks for, of `target` in `projectId`. */
export async function listTasksOf(
  db: Queryable,
  projectId: string,
  target: TaskRunQuery['target'],
  params: ListTasksRequest,
): Promise<ListTasksResponse> {
  const pageSize = pageSizeOf(params);
  const historyLength = checkedHistoryLength(params.historyLength);
  const query: TaskRunQuery = {
    projectId,
    target,
    contextId: params.contextId || undefined,
    statuses: statusesOf(params.status),
    changedSince: changedSinceOf(params.statusTimestampAfter),
  };
  const after = params.pageToken ? decodePageToken(params.pageToken) : null;
  const [{ runs, next }, totalSize] = await Promise.all([
    taskRunsPage(db, query, after, pageSize),
    countTaskRuns(db, query, MAX_COUNTED_TASKS),
  ]);
  return {
    tasks: runs.map((run) => {
      const task = presentTask(run, historyLength);
      // Artifacts only when asked for: a list is for finding tasks, GetTask for reading one.
      return params.includeArtifacts ? task : { ...task, artifacts: [] };
    }),
    nextPageToken: next ? encodePageToken(next) : '',
    pageSize,
    totalSize,
  };
}
