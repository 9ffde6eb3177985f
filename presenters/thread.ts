import type { components } from '../api/generated/openapi.js';
import type { ThreadDeletion, ThreadMessageRecord, ThreadRecord } from '../records/threads.js';
import { unixSeconds } from './time.js';

export function presentThread(thread: ThreadRecord): components['schemas']['Thread'] {
  return {
    id: thread.id,
    object: 'thread',
    subject_id: thread.subject_id,
    metadata: thread.metadata,
    message_count: thread.message_count,
    last_run_id: thread.last_run_id,
    created_at: unixSeconds(thread.created_at),
    updated_at: unixSeconds(thread.updated_at),
  };
}

export function presentThreadMessage(message: ThreadMessageRecord): components['schemas']['ThreadMessage'] {
  return {
    id: message.id,
    object: 'thread.message',
    thread_id: message.thread_id,
    run_id: message.run_id,
    role: message.role,
    content: message.content,
    created_at: unixSeconds(message.created_at),
  };
}

export function presentDeletedThread(id: string, removed: ThreadDeletion): components['schemas']['DeletedThread'] {
  return {
    id,
    object: 'thread',
    deleted: true,
    messages_removed: removed.messages,
    memories_removed: removed.memories,
    runs_cleared: removed.runs,
    experiment_items_cleared: removed.experimentItems,
  };
}
