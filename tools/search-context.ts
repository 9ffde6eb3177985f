/**
 * The built-in `search_context` tool: the project's context graph and the text of its context files, searched
 * for what the model asks. Its answer numbers each passage and cites it (file, page or time span); the run
 * keeps those citations with its output. Offered when the project has at least one processed context file.
 */
import type { ToolSpec } from '../models/messages.js';
import { statement, type Queryable } from '../records/db.js';
import { HAS_CONTEXT_FILES } from '../records/files.js';
import { matchingNodes, matchingPassages, relationsAmong } from '../records/graph-search.js';
import { searchMemories } from '../records/memories.js';
import type { Citation } from '../records/run-steps.js';
import { embedQuery } from '../models/embeddings.js';
import { storableText } from '../models/storable-text.js';
import { argumentsValidator } from './argument-schemas.js';
import { SEARCH_CONTEXT_TOOL } from './definitions.js';
import type { ToolResult } from './outcomes.js';

export interface ContextScope {
  db: Queryable;
  projectId: string;
  /** The embedding model's folder, if installed: passages are found by meaning as well as words. */
  embeddingModelDir?: string;
  /** The subject whose memories are searched too, when the run is given them. */
  memorySubject?: string | null;
}

const PARAMETERS = {
  type: 'object',
  properties: {
    query: { type: 'string', minLength: 1, maxLength: 200, description: 'Words, names or a question to look up.' },
    limit: { type: 'integer', minimum: 1, maximum: 10, description: 'At most this many passages and entities. Default 5.' },
  },
  required: ['query'],
  additionalProperties: false,
};

export const searchContextSpec: ToolSpec = {
  name: SEARCH_CONTEXT_TOOL,
  description:
    "Searches the project's documents, images and recordings (their extracted text) and the people, organisations, places, " +
    'dates and amounts found in them, with how they relate. Answers with numbered passages, each citing its file and page ' +
    'or time span; cite them as [1], [2].',
  parameters: PARAMETERS,
};

const HAS_CONTEXT = statement('has_context', `SELECT ${HAS_CONTEXT_FILES('$1')} AS has`);

export async function hasContext(scope: ContextScope): Promise<boolean> {
  const { rows } = await scope.db.query<{ has: boolean }>(HAS_CONTEXT, [scope.projectId]);
  return rows[0]!.has;
}

export async function searchContext(args: Record<string, unknown>, scope: ContextScope): Promise<ToolResult> {
  const problem = argumentsValidator(PARAMETERS)(args);
  if (problem) return { content: `The arguments do not match the tool's parameters: ${problem}`, is_error: true };
  const query = storableText(args.query as string);
  const limit = (args.limit as number | undefined) ?? 5;
  const [passages, nodes, memories] = await Promise.all([
    matchingPassages(scope.db, scope.projectId, query, limit, await embedQuery(scope.embeddingModelDir, query).catch(() => undefined)),
    matchingNodes(scope.db, scope.projectId, query, undefined, limit),
    scope.memorySubject ? searchMemories(scope.db, scope.projectId, scope.memorySubject, query, limit) : Promise.resolve([]),
  ]);
  const relations = await relationsAmong(
    scope.db,
    nodes.map((n) => n.id),
    limit,
  );
  if (passages.length === 0 && nodes.length === 0 && memories.length === 0)
    return { content: `Nothing in the project's context matches ${JSON.stringify(query)}.`, is_error: false };

  const citations: Citation[] = passages.map((p) => ({
    file_id: p.file_id,
    filename: p.filename,
    page: p.start_ms === null ? p.page_number : null,
    start_ms: p.start_ms,
    end_ms: p.end_ms,
    quote: p.snippet,
  }));
  const lines = citations.map((c, i) => `[${i + 1}] ${JSON.stringify(c.filename)} (${c.file_id}), ${where(c)}: ${c.quote}`);
  if (nodes.length > 0) {
    lines.push('', 'Entities:');
    for (const n of nodes)
      lines.push(
        `- ${n.name} (${n.entity_type}), mentioned ${n.mentions} time${n.mentions === 1 ? '' : 's'} in ${n.files} file${n.files === 1 ? '' : 's'}`,
      );
  }
  const stated = relations.filter((r) => r.relation !== 'co_occurs');
  if (stated.length > 0) {
    lines.push('', 'Relations:');
    for (const r of stated) {
      const source = r.sources[0];
      lines.push(
        `- ${r.source.name} ${r.relation.replaceAll('_', ' ')} ${r.target.name}${source ? ` (${JSON.stringify(source.filename)}, ${where(source)})` : ''}`,
      );
    }
  }
  if (memories.length > 0) {
    if (lines.length > 0) lines.push('');
    lines.push('What the user said before:');
    for (const m of memories) {
      const said = m.sources[0];
      const superseded = m.status === 'superseded' ? ' (no longer true: superseded by a later statement)' : '';
      lines.push(
        `- ${m.statement}${superseded}${said ? `, in their words: ${JSON.stringify(said.quote)} (${said.learned_at.toISOString().slice(0, 10)})` : ''}`,
      );
    }
  }
  return { content: lines.join('\n'), is_error: false, citations };
}

/** A page, or an audio time span. */
function where(c: { page: number | null; start_ms: number | null; end_ms: number | null }): string {
  return c.start_ms !== null ? `${clock(c.start_ms)}–${clock(c.end_ms ?? c.start_ms)}` : `page ${c.page}`;
}

/** m:ss.s */
function clock(ms: number): string {
  const seconds = ms / 1000;
  return `${Math.floor(seconds / 60)}:${(seconds % 60).toFixed(1).padStart(4, '0')}`;
}
