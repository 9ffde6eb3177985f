import assert from 'node:assert/strict';
import { Role, type Message, type Part } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError } from '@a2a-js/sdk/errors';
import { MAX_FILE_BYTES, MAX_FILE_PARTS, messageInputOf } from '../../api/a2a/message-input.js';
import { decodePageToken, encodePageToken } from '../../api/a2a/task-list.js';

const part = (content: Part['content'], mediaType = '', filename = ''): Part => ({ content, metadata: undefined, filename, mediaType });
const message = (...parts: Part[]): Message => ({
  messageId: 'm-1',
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const text = (value: string) => part({ $case: 'text', value });
const raw = (value: Buffer, mediaType = 'text/plain', filename = '') => part({ $case: 'raw', value }, mediaType, filename);

describe('an A2A message as a run’s input', () => {
  it('joins text parts and data parts (as their JSON) with newlines, and takes raw parts as files', () => {
    const input = messageInputOf(
      message(text('Sum these:'), part({ $case: 'data', value: { a: 1 } }), raw(Buffer.from('1 2'), 'text/csv', 'n.csv')),
    );
    assert.equal(input.text, 'Sum these:\n{"a":1}');
    assert.deepEqual(
      input.files.map((f) => [f.data.toString(), f.mediaType, f.filename]),
      [['1 2', 'text/csv', 'n.csv']],
    );
  });

  it('names the files of a message that has nothing else, and gives a file without a name one', () => {
    const input = messageInputOf(message(raw(Buffer.from('a'), 'text/plain', 'a.txt'), raw(Buffer.from('b'), '')));
    assert.equal(input.text, 'Attached: a.txt, attachment-2.');
  });

  it('refuses a file by url, and a declared type the platform does not take, as content types it does not support', () => {
    assert.throws(
      () => messageInputOf(message(part({ $case: 'url', value: 'https://example.com/a.pdf' }, 'application/pdf'))),
      ContentTypeNotSupportedError,
    );
    assert.throws(() => messageInputOf(message(text('Look.'), raw(Buffer.from('GIF89a'), 'image/gif'))), ContentTypeNotSupportedError);
  });

  it('refuses more files, or more bytes of them, than a message may carry, and an empty file', () => {
    const many = Array.from({ length: MAX_FILE_PARTS + 1 }, () => raw(Buffer.from('x')));
    assert.throws(() => messageInputOf(message(...many)), RequestMalformedError);
    assert.throws(() => messageInputOf(message(raw(Buffer.alloc(MAX_FILE_BYTES + 1, 0x61)))), RequestMalformedError);
    assert.throws(() => messageInputOf(message(text('Hi.'), raw(Buffer.alloc(0)))), RequestMalformedError);
  });
});

describe('a ListTasks page token', () => {
  it('gives back the position it holds, and refuses one this server did not make', () => {
    const position = { micros: '1795000000123456', id: 'run_Ab3' };
    assert.deepEqual(decodePageToken(encodePageToken(position)), position);
    for (const token of ['not-a-token', Buffer.from('[1,2]').toString('base64url'), Buffer.from('["1","file_x"]').toString('base64url')]) {
      assert.throws(() => decodePageToken(token), RequestMalformedError, token);
    }
  });
});
