/**
 * What a client's message gives a run: its text (text parts, and data parts as their JSON, joined by newlines)
 * and its files (parts with the file's bytes, `raw`; 0.3: `file.bytes`), which become the run's attachments. A
 * file named by `url` is not fetched: the client sends its bytes.
 */
import { Role, type Message } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError } from '@a2a-js/sdk/errors';
import { isSupportedDeclaredType } from '../routes/files/content-type.js';

/** As a run's input (CreateRunRequest.input). */
export const MAX_TEXT_CHARS = 262_144;
/** Files a message may carry, and their bytes together: larger files go through POST /v1/files and the REST run. */
export const MAX_FILE_PARTS = 10;
export const MAX_FILE_BYTES = 10 * 1024 * 1024;

/** The media types a message may carry: text and structured data, and the files the platform takes as attachments. */
export const INPUT_MODES = ['text/plain', 'application/json', 'application/pdf', 'image/png', 'image/jpeg', 'audio/wav', 'audio/mp4'];

export interface MessageFile {
  data: Buffer;
  filename: string;
  /** As the client declared it; empty when it did not (the content decides). */
  mediaType: string;
}

export interface MessageInput {
  text: string;
  files: MessageFile[];
}

const unsupportedType = (mediaType: string) =>
  new ContentTypeNotSupportedError(
    `Files of type ${mediaType} are not supported: send ${INPUT_MODES.slice(2).join(', ')} or UTF-8 text (text/plain or any text/*).`,
  );

function fileOf(data: Buffer, filename: string, mediaType: string, index: number): MessageFile {
  if (!isSupportedDeclaredType(mediaType)) throw unsupportedType(mediaType);
  if (data.length === 0) throw new RequestMalformedError(`The file of part ${index} is empty.`);
  return { data, filename: filename || `attachment-${index + 1}`, mediaType };
}

/** The message's text and files, refused with the protocol's error when a part is not one this agent takes. */
export function messageInputOf(message: Message | undefined): MessageInput {
  if (!message) throw new RequestMalformedError('`message` is required.');
  if (message.role !== Role.ROLE_USER) throw new RequestMalformedError("The message's role must be ROLE_USER.");
  if (message.parts.length === 0) throw new RequestMalformedError('The message needs at least one part.');
  const texts: string[] = [];
  const files: MessageFile[] = [];
  message.parts.forEach((part, index) => {
    switch (part.content?.$case) {
      case 'text':
        texts.push(part.content.value);
        return;
      case 'data':
        texts.push(JSON.stringify(part.content.value));
        return;
      case 'raw':
        files.push(fileOf(part.content.value, part.filename, part.mediaType, index));
        return;
      case 'url':
        throw new ContentTypeNotSupportedError(
          `Part ${index} names a file by url, which this agent does not fetch: send the file's bytes in the part (raw; 0.3: file.bytes).`,
        );
      default:
        throw new RequestMalformedError(`Part ${index} has no content: give it text, raw, url or data.`);
    }
  });
  if (files.length > MAX_FILE_PARTS) throw new RequestMalformedError(`A message carries at most ${MAX_FILE_PARTS} files.`);
  const bytes = files.reduce((sum, file) => sum + file.data.length, 0);
  if (bytes > MAX_FILE_BYTES) {
    throw new RequestMalformedError(
      `The message's files are over ${MAX_FILE_BYTES} bytes together: upload larger files with POST /v1/files and run with file_ids.`,
    );
  }
  // A message of files alone is about them: its text names them, as the run's input must say something.
  const text = texts.length > 0 ? texts.join('\n') : `Attached: ${files.map((f) => f.filename).join(', ')}.`;
  if (text.trim() === '') throw new RequestMalformedError('The message has no text.');
  if (text.length > MAX_TEXT_CHARS) throw new RequestMalformedError(`The message's text is over ${MAX_TEXT_CHARS} characters.`);
  if (text.includes('\u0000')) throw new RequestMalformedError('The message holds the NUL character (U+0000).');
  return { text, files };
}
