import type { components } from '../api/generated/openapi.js';
import type { MemoryRecord, SubjectForgotten } from '../records/memories.js';
import { unixSeconds } from './time.js';

export function presentMemory(memory: MemoryRecord): components['schemas']['Memory'] {
  return {
    id: memory.id,
    object: 'memory',
    subject_id: memory.subject_id,
    attribute: memory.attribute,
    value: memory.value,
    statement: memory.statement,
    confidence: Math.round(memory.confidence * 1000) / 1000,
    extractor: memory.extractor,
    status: memory.status,
    superseded_by: memory.superseded_by,
    superseded_reason: memory.superseded_reason,
    superseded_at: unixSeconds(memory.superseded_at),
    learned_at: unixSeconds(memory.learned_at),
    source_count: memory.source_count,
    sources: memory.sources.map((source) => ({
      thread_id: source.thread_id,
      run_id: source.run_id,
      message_id: source.message_id,
      start: source.start,
      end: source.end,
      quote: source.quote,
      learned_at: unixSeconds(source.learned_at),
    })),
  };
}

export function presentDeletedMemory(id: string): components['schemas']['DeletedMemory'] {
  return { id, object: 'memory', deleted: true };
}

export function presentForgottenSubject(subjectId: string, removed: SubjectForgotten): components['schemas']['ForgottenSubject'] {
  return { id: subjectId, object: 'subject', forgotten: true, removed };
}
