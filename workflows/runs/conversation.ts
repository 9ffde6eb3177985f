/**
 * The conversation a model call sees, rebuilt from PostgreSQL each time: the agent's instructions, the
 * conversation of the run it continues (or as much of its thread as fits), the attachments, this run's input, then
 * every message its completed steps added. Nothing of it travels through the workflow's history.
 */
import type { Queryable } from '../../records/db.js';
import type { ChatMessage, ContentPart } from '../../models/messages.js';
import { attachmentsOf, textPreviewOf } from '../../records/files.js';
import { runById, type RunRecord } from '../../records/runs.js';
import { stepsOf, type RunStepRecord } from '../../records/run-steps.js';
import type { AgentDefinition } from '../../records/agents.js';
import { historyWithin, messageTokens } from '../../records/threads.js';
import { currentMemories, rememberedSubject, type MemoryRecord } from '../../records/memories.js';

// How much of each attachment's text goes into the context; the model reads further with `read_file`.
const ATTACHMENT_PREVIEW_CHARS = 20_000;
// Continuations are followed this far back.
const MAX_CONTINUATION_DEPTH = 50;

/** The messages of a run and of the runs it continues, oldest first, without any system message. */
async function turnsOf(db: Queryable, run: RunRecord, depth = 0): Promise<ChatMessage[]> {
  const earlier = run.previous_run_id && depth < MAX_CONTINUATION_DEPTH ? await runById(db, run.previous_run_id) : null;
  const before = earlier ? await turnsOf(db, earlier, depth + 1) : [];
  // A run whose steps' messages expired is its input and its output, the steps between them gone.
  if (run.payloads_expired_at)
    return [...before, ...run.input, ...(run.output_text ? [{ role: 'assistant' as const, content: run.output_text }] : [])];
  const steps = await stepsOf(db, run.id);
  const added = steps.filter((s) => s.status === 'completed' && s.message).map((s) => s.message!);
  return [...before, ...run.input, ...added];
}

async function attachmentMessage(db: Queryable, run: RunRecord, vision: boolean): Promise<ChatMessage | null> {
  const files = await attachmentsOf(db, run.project_id, run.file_ids);
  if (files.length === 0) return null;
  const parts: ContentPart[] = [];
  for (const file of files) {
    const preview = await textPreviewOf(db, file.id, ATTACHMENT_PREVIEW_CHARS);
    const header = `Attached file ${file.filename} (file_id ${file.id}, ${file.mime_type}, ${file.pages} page(s))`;
    const more = preview.truncated ? '\n[…truncated: call read_file for the rest]' : '';
    parts.push({ type: 'text', text: preview.text ? `${header}:\n${preview.text}${more}` : `${header}: no text was extracted.` });
    if (vision && (file.mime_type === 'image/png' || file.mime_type === 'image/jpeg')) {
      parts.push({ type: 'image', file_id: file.id, media_type: file.mime_type });
    }
  }
  return { role: 'user', content: parts };
}

/** The subject's current memories as the model reads them: each fact, and when it was stated. */
function memoryMessage(memories: MemoryRecord[]): string {
  const lines = memories.map((m) => `- ${m.statement} (stated ${m.learned_at.toISOString().slice(0, 10)})`);
  return `What the user has told you before, in earlier conversations (newest first; search_context finds more):\n${lines.join('\n')}`;
}

const omissionNote = (omitted: number) => `${omitted} earlier message(s) of this conversation are not shown.`;
// More than any thread holds: the note's longest count.
const MAX_THREAD_MESSAGES = 999_999_999;

/** The thread a run's conversation continues: its own, or, for a network's hop, its network run's. */
async function threadOf(db: Queryable, run: RunRecord): Promise<string | null> {
  if (run.thread_id || !run.parent_run_id) return run.thread_id;
  return (await runById(db, run.parent_run_id))?.thread_id ?? null;
}

/**
 * The window rule: a thread's history gets what the model's context window leaves once the rest of the call
 * (instructions, attachments, input, the run's own steps, tools) and its output allowance are counted, and keeps the
 * newest messages that fit whole (records/threads.ts `historyWithin`). The older ones are dropped, and the model is
 * told how many.
 */
async function threadHistory(
  db: Queryable,
  threadId: string,
  rest: ChatMessage[],
  room: { window: number; output: number; tools: number },
): Promise<ChatMessage[]> {
  const used = rest.reduce((sum, message) => sum + messageTokens(JSON.stringify(message.content)), 0);
  // Room is kept for the note, counted at its longest.
  const left = room.window - room.output - room.tools - used - messageTokens(JSON.stringify(omissionNote(MAX_THREAD_MESSAGES)));
  const { messages, omitted } = await historyWithin(db, threadId, Math.max(0, left));
  const note: ChatMessage[] = omitted > 0 ? [{ role: 'system', content: omissionNote(omitted) }] : [];
  return [...note, ...messages];
}

/** `steps` are the run's own, as its caller has just read them. */
export async function conversationFor(
  db: Queryable,
  run: RunRecord,
  agent: AgentDefinition,
  steps: RunStepRecord[],
  options: { vision: boolean; window: number; outputAllowance: number; toolTokens: number },
): Promise<ChatMessage[]> {
  const head: ChatMessage[] = [];
  if (agent.instructions) head.push({ role: 'system', content: agent.instructions });
  const subject = await rememberedSubject(db, run, agent.memory.enabled);
  const memories = subject ? await currentMemories(db, run.project_id, subject) : [];
  if (memories.length > 0) head.push({ role: 'system', content: memoryMessage(memories) });
  const earlier = run.previous_run_id ? await runById(db, run.previous_run_id) : null;
  if (earlier) head.push(...(await turnsOf(db, earlier)));
  const tail: ChatMessage[] = [];
  const attachments = await attachmentMessage(db, run, options.vision);
  if (attachments) tail.push(attachments);
  tail.push(...run.input);
  tail.push(...steps.filter((s) => s.status === 'completed' && s.message).map((s) => s.message!));
  const threadId = await threadOf(db, run);
  const history = threadId
    ? await threadHistory(db, threadId, [...head, ...tail], {
        window: options.window,
        output: options.outputAllowance,
        tools: options.toolTokens,
      })
    : [];
  return [...head, ...history, ...tail];
}

/** The text of the run's last assistant message: the run's output. */
export async function finalTextOf(db: Queryable, runId: string): Promise<string> {
  const steps = await stepsOf(db, runId);
  const last = steps.filter((s) => s.status === 'completed' && s.message?.role === 'assistant').at(-1);
  return last?.message?.content && typeof last.message.content === 'string' ? last.message.content : '';
}
