/**
 * Decides a file's type from its bytes while it streams: the first bytes name a binary type, or else the
 * whole payload must be UTF-8 text without NUL bytes. Counts the bytes and hashes them on the way.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { createHash } from 'node:crypto';
import { TextDecoder } from 'node:util';
import { fileTypeFromBuffer } from 'file-type';
import { ApiError, PayloadTooLargeError, UnsupportedMediaError } from '../../errors.js';
import type { FileMimeType } from '../../../records/files.js';

export const MAX_FILE_BYTES = 104_857_600;
export type SupportedType = FileMimeType;

// file-type's extension → the type we store and present.
const BINARY_TYPES: Record<string, SupportedType> = {
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  wav: 'audio/wav',
  m4a: 'audio/mp4',
};

// What a client may declare for each type, besides the generic application/octet-stream.
const DECLARED_ALIASES: Record<SupportedType, RegExp> = {
  'application/pdf': /^application\/(pdf|x-pdf)$/,
  'image/png': /^image\/png$/,
  'image/jpeg': /^image\/(jpeg|jpg|pjpeg)$/,
  'audio/wav': /^audio\/(wav|x-wav|wave|vnd\.wave)$/,
  'audio/mp4': /^audio\/(mp4|m4a|x-m4a|aac)$/,
  'text/plain': /^text\/[a-z0-9.+-]+$/,
};

const SNIFF_BYTES = 4100;

export class ContentInspector extends Transform {
  bytes = 0;
  detected: SupportedType | null = null;
  private readonly hash = createHash('sha256');
  private head: Buffer[] = [];
  private headBytes = 0;
  private text: TextDecoder | null = null;

  constructor(private readonly limit = MAX_FILE_BYTES) {
    super();
  }

  get sha256(): string {
    return this.hash.copy().digest('hex');
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      return done(PayloadTooLargeError(`The file is larger than the ${this.limit}-byte limit.`, 'file'));
    }
    this.hash.update(chunk);
    if (this.detected === null && this.text === null) {
      this.head.push(chunk);
      this.headBytes += chunk.length;
      if (this.headBytes < SNIFF_BYTES) return done();
      this.decide().then(() => done(), done);
      return;
    }
    try {
      this.checkText(chunk);
      done(null, chunk);
    } catch (err) {
      done(err as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    const finish = () => {
      try {
        if (this.text) {
          this.text.decode();
          this.detected = 'text/plain';
        }
        done();
      } catch {
        done(notText());
      }
    };
    if (this.detected === null && this.text === null) {
      if (this.bytes === 0) return done(new ApiError(400, 'invalid_request_error', 'empty_file', 'The file is empty.', 'file'));
      this.decide().then(finish, done);
      return;
    }
    finish();
  }

  private async decide(): Promise<void> {
    const head = Buffer.concat(this.head);
    this.head = [];
    const wide = wideTextEncoding(head);
    if (wide) throw notUtf8Text(wide);
    const found = await fileTypeFromBuffer(head);
    const type = found && BINARY_TYPES[found.ext];
    if (type) {
      this.detected = type;
    } else {
      // Some signatures are ordinary text ("BMW…" starts like a BMP, "<?xml" is XML): UTF-8 text stays text.
      this.text = new TextDecoder('utf-8', { fatal: true });
      try {
        this.checkText(head);
      } catch (err) {
        throw found ? unsupported(found.mime) : err;
      }
    }
    this.push(head);
  }

  /** Throws unless the chunk continues valid UTF-8 text (when the payload is text at all). */
  private checkText(chunk: Buffer): void {
    if (!this.text) return;
    try {
      if (chunk.includes(0)) throw new Error('NUL byte');
      this.text.decode(chunk, { stream: true });
    } catch {
      throw notText();
    }
  }
}

// Byte order marks of the text encodings other than UTF-8 a file is saved in (Windows' "Unicode" is UTF-16LE),
// longest first: UTF-32LE's starts as UTF-16LE's does. Their bytes resemble other formats' signatures (FF FE
// starts an MPEG audio frame), so they are told by name before those are looked for.
const WIDE_BOMS: [string, Buffer][] = [
  ['UTF-32', Buffer.from([0xff, 0xfe, 0x00, 0x00])],
  ['UTF-32', Buffer.from([0x00, 0x00, 0xfe, 0xff])],
  ['UTF-16', Buffer.from([0xff, 0xfe])],
  ['UTF-16', Buffer.from([0xfe, 0xff])],
];

function wideTextEncoding(head: Buffer): string | undefined {
  return WIDE_BOMS.find(([, bom]) => head.subarray(0, bom.length).equals(bom))?.[0];
}

const typeOf = (declared: string | undefined) => (declared ?? '').split(';')[0]!.trim().toLowerCase();
const isGeneric = (type: string) => type === '' || type === 'application/octet-stream';

/** Whether a declared part type agrees with the detected one (generic declarations always do). */
export function declaredTypeAgrees(declared: string | undefined, detected: SupportedType): boolean {
  const type = typeOf(declared);
  return isGeneric(type) || DECLARED_ALIASES[detected].test(type);
}

/** Whether a declared type is one the platform takes, before the content is looked at (generic ones leave it to the content). */
export function isSupportedDeclaredType(declared: string | undefined): boolean {
  const type = typeOf(declared);
  return isGeneric(type) || Object.values(DECLARED_ALIASES).some((alias) => alias.test(type));
}

const unsupported = (what: string) =>
  UnsupportedMediaError(
    'unsupported_file_type',
    `Files of type ${what} are not supported. Upload PDF, PNG, JPEG, WAV, M4A or UTF-8 plain text.`,
    'file',
  );
const notText = () => unsupported('unknown binary data (not UTF-8 text)');
const notUtf8Text = (encoding: string) =>
  UnsupportedMediaError(
    'unsupported_file_type',
    `The file is ${encoding} text; plain text must be UTF-8. Save it as UTF-8 and upload it again.`,
    'file',
  );
