/**
 * The built-in `read_file` tool: the text extracted from the files attached to a run, in bounded parts.
 * A run reads only its own attachments, and only those of its project; anything else is "no such
 * attachment", whether or not such a file exists.
 */
import type { ToolSpec } from '../models/messages.js';
import type { Queryable } from '../records/db.js';
import { textSlice, textSourcesIn, type TextSource } from '../records/file-text.js';
import { argumentsValidator } from './argument-schemas.js';
import { READ_FILE_TOOL } from './definitions.js';
import type { ToolResult } from './outcomes.js';

export const DEFAULT_READ_LENGTH = 8_000;
const MAX_READ_LENGTH = 32_000;

export interface Attachments {
  db: Queryable;
  projectId: string;
  attachmentIds: string[];
}

const PARAMETERS = {
  type: 'object',
  properties: {
    file_id: { type: 'string', description: 'The id of an attached file.' },
    page: { type: 'integer', minimum: 1, description: 'Read this page only. Leave it out to read the whole text.' },
    offset: { type: 'integer', minimum: 0, description: 'Where to start, in characters from the start of the page or text. Default 0.' },
    length: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_READ_LENGTH,
      description: `How many characters to read. Default ${DEFAULT_READ_LENGTH}.`,
    },
  },
  required: ['file_id'],
  additionalProperties: false,
};

interface ReadFileArguments {
  file_id: string;
  page?: number;
  offset?: number;
  length?: number;
}

/** The tool as offered to the model, naming the attached files it can read (id, name and size only). */
export async function readFileSpec(attachments: Attachments): Promise<ToolSpec> {
  const sources = await textSourcesIn(attachments.db, attachments.projectId, attachments.attachmentIds);
  const listed = sources.map((s) => `- ${s.id}: ${JSON.stringify(s.filename)}, ${describeState(s)}`).join('\n');
  return {
    name: READ_FILE_TOOL,
    description:
      `Reads the text extracted from a file attached to this run, at most ${DEFAULT_READ_LENGTH} characters at a time unless a length is given. ` +
      'Without a page it reads the whole text, where each page starts with a "[page N]" line. ' +
      `Each answer says where it stopped and how to read on.\nAttached files:\n${listed || '- none readable'}`,
    parameters: PARAMETERS,
  };
}

export async function readFile(args: Record<string, unknown>, attachments: Attachments): Promise<ToolResult> {
  const problem = argumentsValidator(PARAMETERS)(args);
  if (problem) return { content: `The arguments do not match the tool's parameters: ${problem}`, is_error: true };
  const { file_id: fileId, page, offset = 0, length = DEFAULT_READ_LENGTH } = args as unknown as ReadFileArguments;
  const [source] = attachments.attachmentIds.includes(fileId) ? await textSourcesIn(attachments.db, attachments.projectId, [fileId]) : [];
  if (!source) return { content: `There is no such attachment: ${fileId}`, is_error: true };
  if (source.status !== 'processed') return { content: `${fileId} is ${describeState(source)}.`, is_error: true };
  if (page !== undefined && page > source.pages)
    return { content: `${fileId} has ${source.pages} page${source.pages === 1 ? '' : 's'}.`, is_error: true };

  const slice = await textSlice(attachments.db, fileId, page ?? null, offset, length);
  if (!slice) return { content: `${fileId} has no page ${page}.`, is_error: true };
  const where = page === undefined ? 'the text' : `page ${page} of ${source.pages}`;
  if (offset > 0 && offset >= slice.total_chars) {
    return { content: `The offset ${offset} is past the end of ${where}, which has ${slice.total_chars} characters.`, is_error: true };
  }
  const end = offset + [...slice.text].length;
  const header = `[${fileId}, ${where}, characters ${offset}–${end} of ${slice.total_chars}]`;
  return { content: `${header}\n${slice.text}\n${continuation(fileId, page, end, slice.total_chars, source.pages)}`, is_error: false };
}

function continuation(fileId: string, page: number | undefined, end: number, total: number, pages: number): string {
  if (end < total)
    return `[More follows: call ${READ_FILE_TOOL} with ${JSON.stringify({ file_id: fileId, ...(page === undefined ? {} : { page }), offset: end })}]`;
  if (page !== undefined && page < pages) return `[End of page ${page}; page ${page + 1} follows.]`;
  return '[End of the file.]';
}

function describeState(source: TextSource): string {
  const pages = `${source.pages} page${source.pages === 1 ? '' : 's'}`;
  if (source.status === 'processed') return pages;
  if (source.status === 'processing') return 'still being processed; its text cannot be read yet';
  return `unreadable: its text could not be extracted (${source.last_error?.message ?? 'extraction failed'})`;
}
