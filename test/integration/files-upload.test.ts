import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { sharedApi, newTenant, startTestApi, type Tenant, type TestApi } from '../support/api.js';
import { eventually } from '../support/eventually.js';
import * as fixtures from '../support/fixtures.js';
import type { ApiResponse, UploadParts } from '../support/client.js';
import { assertDocumentedResponse } from '../support/contract.js';

const MAX_FILE_BYTES = 104_857_600;

/** Deterministic bytes that no type sniffer recognises and that are not UTF-8 text. */
function noiseBytes(length: number): Buffer {
  const chunks: Buffer[] = [];
  let block = createHash('sha256').update('agentplane noise').digest();
  for (let total = 0; total < length; total += block.length) {
    chunks.push(block);
    block = createHash('sha256').update(block).digest();
  }
  return Buffer.concat(chunks).subarray(0, length);
}

/** A WAV of exactly `bytes` bytes: a valid header followed by silence. */
function wavOfSize(bytes: number): Blob {
  return new Blob([fixtures.wavHeader(bytes - 44), Buffer.alloc(bytes - 44)]);
}

/**
 * Starts a multipart upload that declares `declaredBytes` of body but sends only its first part, and
 * resolves with the answer the server gives without waiting for the rest.
 */
function uploadDeclaring(baseUrl: string, key: string, declaredBytes: number): Promise<ApiResponse> {
  const boundary = 'agentplane-declared-length';
  const start = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\ncontext\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/v1/files`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(declaredBytes),
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        req.destroy();
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          assertDocumentedResponse('POST', '/v1/files', res.statusCode!, body, res.headers['content-type'] ?? '');
          resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), body });
        } catch (err) {
          reject(err);
        }
      });
    });
    req.write(start);
  });
}

/** Starts a multipart upload of a WAV declared as `declaredBytes` long and sends only `sentBytes` of it. */
function startPartialUpload(baseUrl: string, key: string, declaredBytes: number, sentBytes: number) {
  const boundary = 'agentplane-partial';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\ncontext\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  );
  const req = request(`${baseUrl}/v1/files`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + declaredBytes + `\r\n--${boundary}--\r\n`.length),
    },
  });
  req.on('error', () => {});
  const wav = fixtures.wavHeader(declaredBytes - 44);
  req.write(Buffer.concat([head, wav, Buffer.alloc(sentBytes - wav.length)]));
  return req;
}

const pairs = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, `value ${i}`]));
const bracketFields = (count: number): [string, string][] => Array.from({ length: count }, (_, i) => [`metadata[k${i}]`, `value ${i}`]);

function assertError(response: ApiResponse, status: number, code: string, param: string | null, type = 'invalid_request_error'): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.deepEqual(Object.keys(response.body), ['error']);
  assert.deepEqual(Object.keys(response.body.error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(response.body.error.type, type);
  assert.equal(response.body.error.code, code);
  assert.equal(response.body.error.param, param);
  assert.equal(typeof response.body.error.message, 'string');
  assert.ok(response.body.error.message.length > 0);
}

async function listDir(path: string): Promise<string[]> {
  try {
    return (await readdir(path)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** What a tenant has stored: file rows, blobs, blob deletions still pending, and partial writes. */
async function storedFor(api: TestApi, tenant: Tenant) {
  const files = await api.services.db.query<{ id: string }>('SELECT id FROM files WHERE project_id = $1 ORDER BY id', [tenant.projectId]);
  const deletions = await api.services.db.query<{ blob_key: string }>(
    'SELECT blob_key FROM blob_deletions WHERE blob_key LIKE $1 ORDER BY blob_key',
    [`files/${tenant.projectId}/%`],
  );
  return {
    files: files.rows.map((r) => r.id),
    blobs: await listDir(join(api.blobDir, 'files', tenant.projectId)),
    pendingDeletions: deletions.rows.map((r) => r.blob_key),
    incoming: await listDir(join(api.blobDir, '.incoming')),
  };
}

describe('POST /v1/files (upload)', () => {
  let api: TestApi;
  let tenant: Tenant;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    tenant = await newTenant(api, 'upload');
  });

  /** Sends the request and checks the error it answers, then that the tenant's storage did not change. */
  async function rejectsAndStoresNothing(
    send: () => Promise<ApiResponse>,
    status: number,
    code: string,
    param: string | null,
    type?: string,
  ) {
    const before = await storedFor(api, tenant);
    const response = await send();
    assertError(response, status, code, param, type);
    assert.deepEqual(await storedFor(api, tenant), before, 'a rejected upload left something behind');
    return response;
  }

  const text = (content = 'hello') => ({ data: Buffer.from(content), filename: 'hello.txt', type: 'text/plain' });
  const upload = (parts: UploadParts, headers?: Record<string, string>) => tenant.admin.upload(parts, headers);

  describe('accepted uploads', () => {
    it('answers 200 with the file in processing, its filename, size, purpose and metadata', async () => {
      const data = fixtures.pdf(['Quarterly report']);
      const response = await upload({
        file: { data, filename: 'report.pdf', type: 'application/pdf' },
        purpose: 'context',
        metadata: { team: 'finance', quarter: 'Q3' },
      });
      assert.equal(response.status, 200);
      assert.match(response.body.id, /^file_/);
      assert.equal(response.body.object, 'file');
      assert.equal(response.body.filename, 'report.pdf');
      assert.equal(response.body.bytes, data.length);
      assert.equal(response.body.purpose, 'context');
      assert.equal(response.body.status, 'processing');
      assert.equal(response.body.mime_type, 'application/pdf');
      assert.deepEqual(response.body.metadata, { team: 'finance', quarter: 'Q3' });
      assert.deepEqual(response.body.extracted, { pages: 0, tables: 0, graph_items: 0 });
      assert.equal(response.body.last_error, null);
      assert.equal(response.body.processed_at, null);
      assert.equal(response.headers.get('idempotent-replayed'), null);

      const fetched = await tenant.admin.get(`/v1/files/${response.body.id}`);
      assert.equal(fetched.status, 200);
      assert.equal(fetched.body.filename, 'report.pdf');
      assert.deepEqual(fetched.body.metadata, { team: 'finance', quarter: 'Q3' });
    });

    it('stores the bytes as one blob under the project and leaves no pending deletion for it', async () => {
      const data = fixtures.jpeg();
      const response = await upload({ file: { data, filename: 'photo.jpg', type: 'image/jpeg' }, purpose: 'attachment' });
      assert.equal(response.status, 200);
      const stored = await storedFor(api, tenant);
      assert.ok(stored.files.includes(response.body.id));
      assert.deepEqual(await readFile(join(api.blobDir, 'files', tenant.projectId, response.body.id)), data);
      assert.ok(!stored.pendingDeletions.includes(`files/${tenant.projectId}/${response.body.id}`));
    });

    it('round-trips metadata given as metadata[key] fields', async () => {
      const response = await upload({
        file: text(),
        purpose: 'context',
        fields: [
          ['metadata[source]', 'crm'],
          ['metadata[owner]', 'ana'],
        ],
      });
      assert.equal(response.status, 200);
      assert.deepEqual(response.body.metadata, { source: 'crm', owner: 'ana' });
      const fetched = await tenant.admin.get(`/v1/files/${response.body.id}`);
      assert.deepEqual(fetched.body.metadata, { source: 'crm', owner: 'ana' });
    });

    it('answers with empty metadata when none is given', async () => {
      const response = await upload({ file: text(), purpose: 'context' });
      assert.equal(response.status, 200);
      assert.deepEqual(response.body.metadata, {});
    });

    it('reduces a filename with a path (../../etc/passwd) to its base name', async () => {
      const response = await upload({
        file: { data: Buffer.from('root:x:0:0'), filename: '../../etc/passwd', type: 'text/plain' },
        purpose: 'context',
      });
      assert.equal(response.status, 200);
      assert.equal(response.body.filename, 'passwd');
      const fetched = await tenant.admin.get(`/v1/files/${response.body.id}`);
      assert.equal(fetched.body.filename, 'passwd');
    });

    it('keeps a filename with non-ASCII characters as sent', async () => {
      const response = await upload({
        file: { data: Buffer.from('cv'), filename: 'résumé 履歴書.txt', type: 'text/plain' },
        purpose: 'context',
      });
      assert.equal(response.status, 200);
      assert.equal(response.body.filename, 'résumé 履歴書.txt');
    });

    it('keeps a metadata key named __proto__ as an ordinary key', async () => {
      const response = await upload({ file: text(), purpose: 'context', metadata: '{"__proto__": "polluted", "plain": "yes"}' });
      assert.equal(response.status, 200);
      assert.deepEqual(Object.entries(response.body.metadata).sort(), [
        ['__proto__', 'polluted'],
        ['plain', 'yes'],
      ]);
    });

    it('reduces a Windows-style path to its base name', async () => {
      const response = await upload({
        file: { data: Buffer.from('notes'), filename: 'C:\\Users\\ana\\notes.txt', type: 'text/plain' },
        purpose: 'context',
      });
      assert.equal(response.status, 200);
      assert.equal(response.body.filename, 'notes.txt');
    });

    it('accepts a part declared application/octet-stream and names the type found in the content', async () => {
      const response = await upload({
        file: { data: fixtures.png(), filename: 'pixel', type: 'application/octet-stream' },
        purpose: 'attachment',
      });
      assert.equal(response.status, 200);
      assert.equal(response.body.mime_type, 'image/png');
    });

    it('accepts 16 metadata pairs as a JSON object', async () => {
      const response = await upload({ file: text(), purpose: 'context', metadata: pairs(16) });
      assert.equal(response.status, 200);
      assert.deepEqual(response.body.metadata, pairs(16));
    });

    it('accepts 16 metadata pairs as metadata[key] fields', async () => {
      const response = await upload({ file: text(), purpose: 'context', fields: bracketFields(16) });
      assert.equal(response.status, 200);
      assert.deepEqual(response.body.metadata, pairs(16));
    });

    it('accepts a metadata key of 64 characters and a value of 512 characters', async () => {
      const metadata = { ['k'.repeat(64)]: 'v'.repeat(512) };
      const response = await upload({ file: text(), purpose: 'context', metadata });
      assert.equal(response.status, 200);
      assert.deepEqual(response.body.metadata, metadata);
    });
  });

  describe('rejected parameters (400)', () => {
    it('answers 400 for a purpose other than context or attachment, and stores nothing', async () => {
      await rejectsAndStoresNothing(() => upload({ file: text(), purpose: 'training' }), 400, 'invalid_parameter', 'purpose');
    });

    it('answers 400 when purpose is given twice, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', fields: [['purpose', 'attachment']] }),
        400,
        'invalid_parameter',
        'purpose',
      );
    });

    it('answers 400 when purpose is missing, and stores nothing', async () => {
      await rejectsAndStoresNothing(() => upload({ file: text() }), 400, 'missing_parameter', 'purpose');
    });

    it('answers 400 when the file part is missing, and stores nothing', async () => {
      await rejectsAndStoresNothing(() => upload({ purpose: 'context' }), 400, 'missing_parameter', 'file');
    });

    it('answers 400 when file is sent as a plain field instead of a file part, and stores nothing', async () => {
      await rejectsAndStoresNothing(() => upload({ purpose: 'context', fields: [['file', 'hello']] }), 400, 'invalid_parameter', 'file');
    });

    it('answers 400 when file is sent as a plain field followed by a file part, and stores nothing', async () => {
      const form = new FormData();
      form.append('purpose', 'context');
      form.append('file', 'hello');
      form.append('file', new Blob([Buffer.from('hello')], { type: 'text/plain' }), 'hello.txt');
      await rejectsAndStoresNothing(() => tenant.admin.request('POST', '/v1/files', { body: form }), 400, 'invalid_parameter', 'file');
    });

    it('answers 400 naming an unknown field, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', fields: [['colour', 'blue']] }),
        400,
        'unknown_parameter',
        'colour',
      );
    });

    it('answers 400 naming a file part other than file, and stores nothing', async () => {
      const form = new FormData();
      form.append('purpose', 'context');
      form.append('document', new Blob([Buffer.from('hello')], { type: 'text/plain' }), 'hello.txt');
      await rejectsAndStoresNothing(() => tenant.admin.request('POST', '/v1/files', { body: form }), 400, 'unknown_parameter', 'document');
    });

    it('answers 400 for two file parts, and stores nothing', async () => {
      const form = new FormData();
      form.append('purpose', 'context');
      form.append('file', new Blob([Buffer.from('one')], { type: 'text/plain' }), 'one.txt');
      form.append('file', new Blob([Buffer.from('two')], { type: 'text/plain' }), 'two.txt');
      await rejectsAndStoresNothing(() => tenant.admin.request('POST', '/v1/files', { body: form }), 400, 'invalid_parameter', 'file');
    });

    it('answers 400 for an empty file, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: { data: Buffer.alloc(0), filename: 'empty.txt', type: 'text/plain' }, purpose: 'context' }),
        400,
        'empty_file',
        'file',
      );
    });

    it('answers 400 for a multipart body without a boundary, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => tenant.admin.request('POST', '/v1/files', { body: 'purpose=context', headers: { 'content-type': 'multipart/form-data' } }),
        400,
        'invalid_multipart',
        null,
      );
    });

    it('answers 400 with metadata_too_many_pairs for 17 pairs as a JSON object, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: pairs(17) }),
        400,
        'metadata_too_many_pairs',
        'metadata',
      );
    });

    it('answers 400 with metadata_too_many_pairs for 17 metadata[key] fields, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', fields: bracketFields(17) }),
        400,
        'metadata_too_many_pairs',
        'metadata',
      );
    });

    it('answers 400 for a metadata value that is not a string, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { count: 3 } }),
        400,
        'metadata_invalid_value',
        'metadata[count]',
      );
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { nested: { a: 'b' } } }),
        400,
        'metadata_invalid_value',
        'metadata[nested]',
      );
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { gone: null } }),
        400,
        'metadata_invalid_value',
        'metadata[gone]',
      );
    });

    it('answers 400 for a metadata key of 65 characters, in either form, and stores nothing', async () => {
      const key = 'k'.repeat(65);
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { [key]: 'v' } }),
        400,
        'metadata_invalid_key',
        'metadata',
      );
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', fields: [[`metadata[${key}]`, 'v']] }),
        400,
        'metadata_invalid_key',
        'metadata',
      );
    });

    it('answers 400 for an empty metadata key, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', fields: [['metadata[]', 'v']] }),
        400,
        'metadata_invalid_key',
        'metadata',
      );
    });

    it('answers 400 for a metadata value of 513 characters, in either form, and stores nothing', async () => {
      const value = 'v'.repeat(513);
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { note: value } }),
        400,
        'metadata_value_too_long',
        'metadata[note]',
      );
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', fields: [['metadata[note]', value]] }),
        400,
        'metadata_value_too_long',
        'metadata[note]',
      );
    });

    it('answers 400 for metadata that is not a JSON object, and stores nothing', async () => {
      for (const metadata of ['not json', '["a", "b"]', '"a string"', '42', 'null']) {
        await rejectsAndStoresNothing(() => upload({ file: text(), purpose: 'context', metadata }), 400, 'invalid_metadata', 'metadata');
      }
    });

    it('answers 400 for metadata given both as a JSON object and as metadata[key] fields, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { a: '1' }, fields: [['metadata[b]', '2']] }),
        400,
        'invalid_metadata',
        'metadata',
      );
    });

    it('answers 400 for a metadata key or value holding half of a surrogate pair, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { note: 'Smile \ud83d' } }),
        400,
        'metadata_invalid_value',
        'metadata[note]',
      );
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { '\ude00': 'v' } }),
        400,
        'metadata_invalid_key',
        'metadata',
      );
    });

    it('answers 400 for a metadata key or value holding the NUL character, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { note: 'a\u0000b' } }),
        400,
        'metadata_invalid_value',
        'metadata[note]',
      );
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', fields: [['metadata[note]', '\u0000']] }),
        400,
        'metadata_invalid_value',
        'metadata[note]',
      );
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context', metadata: { 'a\u0000': 'v' } }),
        400,
        'metadata_invalid_key',
        'metadata',
      );
    });

    for (const [what, part] of [
      ['a field with name=""', 'Content-Disposition: form-data; name=""\r\n\r\nvalue'],
      ['a field with no name', 'Content-Disposition: form-data\r\n\r\nvalue'],
      ['a file part with name=""', 'Content-Disposition: form-data; name=""; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello'],
    ]) {
      it(`answers 400 invalid_multipart for ${what}, and stores nothing`, async () => {
        const boundary = 'agentplane-unnamed';
        const body =
          `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\ncontext\r\n` +
          `--${boundary}\r\n${part}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="hello.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n` +
          `--${boundary}--\r\n`;
        const send = () =>
          tenant.admin.request('POST', '/v1/files', { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
        await rejectsAndStoresNothing(send, 400, 'invalid_multipart', null);
      });
    }

    it('answers 400 for an Idempotency-Key longer than 255 characters, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context' }, { 'idempotency-key': 'x'.repeat(256) }),
        400,
        'invalid_parameter',
        'Idempotency-Key',
      );
    });

    it('answers 400 for an empty Idempotency-Key, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: text(), purpose: 'context' }, { 'idempotency-key': '' }),
        400,
        'invalid_parameter',
        'Idempotency-Key',
      );
    });
  });

  describe('unsupported media (415)', () => {
    it('answers 415 for a GIF, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: { data: fixtures.gif(), filename: 'anim.gif', type: 'image/gif' }, purpose: 'context' }),
        415,
        'unsupported_file_type',
        'file',
      );
    });

    it('answers 415 for random binary bytes, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: { data: noiseBytes(64 * 1024), filename: 'blob.bin' }, purpose: 'context' }),
        415,
        'unsupported_file_type',
        'file',
      );
    });

    it('answers 415 for text containing a NUL byte, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: { data: Buffer.from('hello\0world'), filename: 'nul.txt', type: 'text/plain' }, purpose: 'context' }),
        415,
        'unsupported_file_type',
        'file',
      );
    });

    it('answers 415 for text with a NUL byte past the first 4,100 bytes, and stores nothing', async () => {
      const data = Buffer.concat([Buffer.from('a'.repeat(200_000)), Buffer.from([0]), Buffer.from('b'.repeat(1000))]);
      await rejectsAndStoresNothing(
        () => upload({ file: { data, filename: 'late-nul.txt', type: 'text/plain' }, purpose: 'context' }),
        415,
        'unsupported_file_type',
        'file',
      );
    });

    it('answers 415 for text that is not valid UTF-8, and stores nothing', async () => {
      const data = Buffer.from([0x68, 0x69, 0x20, 0xc3, 0x28, 0x21]);
      await rejectsAndStoresNothing(
        () => upload({ file: { data, filename: 'latin.txt', type: 'text/plain' }, purpose: 'context' }),
        415,
        'unsupported_file_type',
        'file',
      );
    });

    it('answers 415 for text that ends in the middle of a UTF-8 character, and stores nothing', async () => {
      const data = Buffer.concat([Buffer.from('price: 5 '), Buffer.from('€').subarray(0, 2)]);
      await rejectsAndStoresNothing(
        () => upload({ file: { data, filename: 'cut.txt', type: 'text/plain' }, purpose: 'context' }),
        415,
        'unsupported_file_type',
        'file',
      );
    });

    it('answers 415 with file_type_mismatch for a part declared image/png whose content is a PDF, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => upload({ file: { data: fixtures.pdf(['not a picture']), filename: 'picture.png', type: 'image/png' }, purpose: 'context' }),
        415,
        'file_type_mismatch',
        'file',
      );
    });

    it('answers 415 for a JSON body instead of multipart/form-data, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => tenant.admin.post('/v1/files', { purpose: 'context', file: 'aGVsbG8=' }),
        415,
        'unsupported_content_type',
        null,
      );
    });

    it('answers 415 for a urlencoded body instead of multipart/form-data, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () =>
          tenant.admin.request('POST', '/v1/files', {
            body: 'purpose=context&file=hello',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
          }),
        415,
        'unsupported_content_type',
        null,
      );
    });
  });

  describe('size limit (413)', () => {
    it('accepts a file of exactly 104,857,600 bytes and takes it to processed', async function () {
      this.timeout(180_000);
      const response = await upload({
        file: { data: wavOfSize(MAX_FILE_BYTES), filename: 'limit.wav', type: 'audio/wav' },
        purpose: 'attachment',
      });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.equal(response.body.bytes, MAX_FILE_BYTES);
      assert.equal(response.body.mime_type, 'audio/wav');
      const file = await tenant.admin.settledFile(response.body.id, 120_000);
      assert.equal(file.status, 'processed', JSON.stringify(file));
      assert.equal(file.bytes, MAX_FILE_BYTES);
      assert.equal(file.last_error, null);
      const stored = await storedFor(api, tenant);
      assert.ok(stored.blobs.includes(response.body.id));
    });

    it('answers 413 when the file is one byte over 104,857,600 bytes, and stores nothing', async function () {
      this.timeout(180_000);
      const before = await storedFor(api, tenant);
      const response = await upload({
        file: { data: wavOfSize(MAX_FILE_BYTES + 1), filename: 'over.wav', type: 'audio/wav' },
        purpose: 'attachment',
      });
      assertError(response, 413, 'file_too_large', 'file');
      const after = await storedFor(api, tenant);
      assert.deepEqual(after.files, before.files, 'a file record was created');
      assert.deepEqual(after.blobs, before.blobs, 'a blob was left under the blob directory');
      assert.deepEqual(after.incoming, before.incoming, 'a partial write was left in .incoming');
      assert.deepEqual(after.pendingDeletions, [], 'a blob deletion is still pending');
    });

    it('answers 413 before reading the body when its declared length is over the limit, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => uploadDeclaring(api.url, tenant.admin.key!, MAX_FILE_BYTES + 2 * 1024 * 1024),
        413,
        'file_too_large',
        'file',
      );
    });
  });

  describe('interrupted uploads', () => {
    it('removes the partial blob and its lease when the client disconnects mid-upload', async () => {
      const before = await storedFor(api, tenant);
      const req = startPartialUpload(api.url, tenant.admin.key!, 8 * 1024 * 1024, 1024 * 1024);
      await eventually(
        async () => {
          const during = await storedFor(api, tenant);
          assert.equal(during.pendingDeletions.length, before.pendingDeletions.length + 1, 'the upload has not started streaming');
          assert.equal(during.incoming.length, before.incoming.length + 1, 'no partial write yet');
        },
        { message: 'the upload did not start' },
      );
      req.destroy();
      await eventually(async () => assert.deepEqual(await storedFor(api, tenant), before), {
        message: 'the interrupted upload left something behind',
      });
    });
  });

  describe('authentication and scopes', () => {
    it('answers 401 without an API key, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => tenant.admin.withKey(undefined).upload({ file: text(), purpose: 'context' }),
        401,
        'invalid_api_key',
        null,
        'authentication_error',
      );
    });

    it('answers 401 with a key that does not exist, and stores nothing', async () => {
      await rejectsAndStoresNothing(
        () => tenant.admin.withKey('ap_thiskeydoesnotexist0000000000').upload({ file: text(), purpose: 'context' }),
        401,
        'invalid_api_key',
        null,
        'authentication_error',
      );
    });

    it('answers 403 with a key that only has files:read, and stores nothing', async () => {
      const reader = await tenant.keyWith('files:read');
      await rejectsAndStoresNothing(
        () => reader.upload({ file: text(), purpose: 'context' }),
        403,
        'missing_scope',
        null,
        'permission_error',
      );
    });

    it('accepts a key with only files:write', async () => {
      const writer = await tenant.keyWith('files:write');
      const response = await writer.upload({ file: text(), purpose: 'context' });
      assert.equal(response.status, 200);
    });
  });

  describe('Idempotency-Key', () => {
    let own: Tenant;

    beforeEach(async () => {
      own = await newTenant(api, 'upload idempotency');
    });

    const body = (content = 'idempotent body'): UploadParts => ({
      file: { data: Buffer.from(content), filename: 'same.txt', type: 'text/plain' },
      purpose: 'context',
      metadata: { run: 'one' },
    });

    it('replays the original response for the same key and body, with Idempotent-Replayed: true, and stores one file', async () => {
      const first = await own.admin.upload(body(), { 'idempotency-key': 'upload-1' });
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('idempotent-replayed'), null);

      const second = await own.admin.upload(body(), { 'idempotency-key': 'upload-1' });
      assert.equal(second.status, 200);
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      assert.equal(second.body.id, first.body.id);
      assert.deepEqual(second.body, first.body);

      const stored = await storedFor(api, own);
      assert.deepEqual(stored.files, [first.body.id]);
      assert.deepEqual(stored.blobs, [first.body.id]);
      assert.deepEqual(stored.pendingDeletions, []);
    });

    it('answers 409 idempotency_key_reused for the same key with a different body, and stores nothing more', async () => {
      const first = await own.admin.upload(body(), { 'idempotency-key': 'upload-2' });
      assert.equal(first.status, 200);
      const before = await storedFor(api, own);

      const differentContent = await own.admin.upload(body('another body'), { 'idempotency-key': 'upload-2' });
      assertError(differentContent, 409, 'idempotency_key_reused', 'Idempotency-Key', 'conflict_error');
      const differentMetadata = await own.admin.upload({ ...body(), metadata: { run: 'two' } }, { 'idempotency-key': 'upload-2' });
      assertError(differentMetadata, 409, 'idempotency_key_reused', 'Idempotency-Key', 'conflict_error');
      const differentPurpose = await own.admin.upload({ ...body(), purpose: 'attachment' }, { 'idempotency-key': 'upload-2' });
      assertError(differentPurpose, 409, 'idempotency_key_reused', 'Idempotency-Key', 'conflict_error');

      assert.deepEqual(await storedFor(api, own), before);
      assert.deepEqual(before.files, [first.body.id]);
      assert.deepEqual(before.blobs, [first.body.id]);
    });

    it('creates exactly one file when several uploads with one key arrive at once', async () => {
      const responses = await Promise.all(
        Array.from({ length: 6 }, () => own.admin.upload(body('raced'), { 'idempotency-key': 'upload-race' })),
      );
      for (const response of responses) assert.equal(response.status, 200, JSON.stringify(response.body));
      const ids = new Set(responses.map((r) => r.body.id));
      assert.equal(ids.size, 1);
      const originals = responses.filter((r) => r.headers.get('idempotent-replayed') === null);
      assert.equal(originals.length, 1, 'exactly one response is the original');

      const [id] = ids;
      const stored = await storedFor(api, own);
      assert.deepEqual(stored.files, [id]);
      assert.deepEqual(stored.blobs, [id]);
      assert.deepEqual(stored.pendingDeletions, []);
    });

    it('does not claim the key for a rejected upload: a corrected retry with the same key creates the file', async () => {
      const rejected = await own.admin.upload({ ...body(), purpose: 'training' }, { 'idempotency-key': 'upload-retry' });
      assertError(rejected, 400, 'invalid_parameter', 'purpose');
      const retried = await own.admin.upload(body(), { 'idempotency-key': 'upload-retry' });
      assert.equal(retried.status, 200);
      assert.equal(retried.headers.get('idempotent-replayed'), null);
      assert.deepEqual((await storedFor(api, own)).files, [retried.body.id]);
    });

    it('keeps keys per project: another project may use the same key for its own file', async () => {
      const other = await newTenant(api, 'upload idempotency other');
      const mine = await own.admin.upload(body(), { 'idempotency-key': 'shared-key' });
      const theirs = await other.admin.upload(body(), { 'idempotency-key': 'shared-key' });
      assert.equal(mine.status, 200);
      assert.equal(theirs.status, 200);
      assert.notEqual(theirs.body.id, mine.body.id);
      assert.equal(theirs.headers.get('idempotent-replayed'), null);
      assert.deepEqual((await storedFor(api, other)).files, [theirs.body.id]);
      assert.deepEqual((await storedFor(api, own)).files, [mine.body.id]);
      assert.equal((await other.admin.get(`/v1/files/${mine.body.id}`)).status, 404);
    });

    it('creates a new file for each upload without a key, even with the same body', async () => {
      const first = await own.admin.upload(body());
      const second = await own.admin.upload(body());
      assert.equal(first.status, 200);
      assert.equal(second.status, 200);
      assert.notEqual(second.body.id, first.body.id);
      assert.equal((await storedFor(api, own)).files.length, 2);
    });
  });
});

describe('POST /v1/files: what a project’s files may hold (409)', () => {
  // A deployment whose projects' files may hold 10,000 bytes each (AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT, in bytes).
  const LIMIT = 10_000;
  let api: TestApi;
  let tenant: Tenant;

  before(async function () {
    this.timeout(120_000);
    api = await startTestApi({ worker: false, fileStorageBytesPerProject: LIMIT });
    tenant = await newTenant(api, 'storage');
  });

  after(async () => {
    await api?.stop();
  });

  const textOf = (bytes: number, client = tenant.admin) =>
    client.upload({ file: { data: Buffer.from('a'.repeat(bytes)), filename: `${bytes}.txt`, type: 'text/plain' }, purpose: 'attachment' });

  it('refuses a file the project has no room for, storing nothing, while other projects and deleted files make their own room', async () => {
    const first = await textOf(6_000);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const before = await storedFor(api, tenant);
    const over = await textOf(5_000);
    assertError(over, 409, 'file_storage_full', 'file', 'conflict_error');
    assert.equal(
      over.body.error.message,
      "The project's files hold 6,000 bytes of the 10,000 bytes they may hold, and this file (5,000 bytes) does not fit: delete files first.",
    );
    assert.deepEqual(await storedFor(api, tenant), before, 'a refused file left something behind');

    // Another project has room of its own.
    const other = await newTenant(api, 'storage-other');
    assert.equal((await textOf(9_000, other.admin)).status, 200);

    // Exactly full, then refused before the body is read.
    assert.equal((await textOf(4_000)).status, 200);
    const full = await textOf(1);
    assertError(full, 409, 'file_storage_full', 'file', 'conflict_error');
    assert.equal(full.body.error.message, "The project's files hold 10,000 bytes of the 10,000 bytes they may hold: delete files first.");

    // Deleting a file makes room at once; two uploads asking for the same room, one gets it.
    assert.equal((await tenant.admin.delete(`/v1/files/${first.body.id}`)).status, 200);
    const racing = await Promise.all([textOf(4_000), textOf(4_000)]);
    assert.deepEqual(racing.map((r) => r.status).sort(), [200, 409], JSON.stringify(racing.map((r) => r.body)));
    const after = await storedFor(api, tenant);
    assert.equal(after.files.length, 2);
    const orphaned = after.blobs.filter(
      (b) => !after.files.includes(b) && !after.pendingDeletions.includes(`files/${tenant.projectId}/${b}`),
    );
    assert.deepEqual(orphaned, [], 'the refused upload left its blob');
  });
});
