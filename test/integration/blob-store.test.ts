import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { freePort } from '../../cli/embedded.js';
import { BlobNotFoundError, type BlobStore } from '../../records/blobs/store.js';
import { FilesystemBlobStore } from '../../records/blobs/filesystem.js';
import { S3BlobStore, type S3Settings } from '../../records/blobs/s3.js';
import { minio } from '../support/services.js';

interface BlobStoreDriver {
  /** A ready store over storage of its own. */
  open(): Promise<BlobStore>;
  /** A store whose storage cannot be reached. */
  unreachable(): Promise<BlobStore>;
  close(): Promise<void>;
}

const MiB = 1024 * 1024;

/** `total` bytes of a repeatable pseudo-random pattern, in 64 KiB chunks, hashed as they are made. */
function generated(total: number, failAfter?: number): { body: Readable; sha256: () => string } {
  const hash = createHash('sha256');
  async function* chunks() {
    const block = randomBytes(64 * 1024);
    for (let sent = 0; sent < total; sent += block.length) {
      if (failAfter !== undefined && sent >= failAfter) throw new Error('the source failed midway');
      const chunk = Buffer.from(block.subarray(0, Math.min(block.length, total - sent)));
      chunk.writeUInt32BE(sent, 0);
      hash.update(chunk);
      yield chunk;
    }
  }
  return { body: Readable.from(chunks()), sha256: () => hash.digest('hex') };
}

async function sha256Of(body: Readable): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { sha256: hash.digest('hex'), bytes };
}

async function read(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function isNotFound(store: BlobStore, key: string): Promise<void> {
  assert.equal(await store.exists(key), false);
  await assert.rejects(store.get(key), (err: unknown) => err instanceof BlobNotFoundError && err.key === key);
}

/** The behaviour every BlobStore driver promises (records/blobs/store.ts). */
function blobStoreContract(name: string, driver: () => Promise<BlobStoreDriver>): void {
  describe(`${name} blob store`, () => {
    let opened: BlobStoreDriver;
    let store: BlobStore;
    const newKey = () => `files/proj_test/file_${randomUUID().replaceAll('-', '')}`;

    before(async function () {
      this.timeout(120_000);
      opened = await driver();
      store = await opened.open();
    });

    after(async () => {
      await opened?.close();
    });

    it('gives back the bytes it was given', async () => {
      const key = newKey();
      const data = Buffer.from('hello, blob store\n');
      await store.put(key, Readable.from([data]));
      assert.deepEqual(await read(await store.get(key)), data);
      assert.equal(await store.exists(key), true);
    });

    it('streams a multi-megabyte body of unknown length in and out unchanged', async function () {
      this.timeout(120_000);
      const key = newKey();
      const total = 20 * MiB + 12_345;
      const source = generated(total);
      await store.put(key, source.body);
      assert.deepEqual(await sha256Of(await store.get(key)), { sha256: source.sha256(), bytes: total });
    });

    it('stores an empty body', async () => {
      const key = newKey();
      await store.put(key, Readable.from([]));
      assert.equal(await store.exists(key), true);
      assert.equal((await read(await store.get(key))).length, 0);
    });

    it('keeps keys apart', async () => {
      const [a, b] = [newKey(), newKey()];
      await store.put(a, Readable.from([Buffer.from('a')]));
      await store.put(b, Readable.from([Buffer.from('b')]));
      assert.equal((await read(await store.get(a))).toString(), 'a');
      assert.equal((await read(await store.get(b))).toString(), 'b');
      await store.delete(a);
      assert.equal((await read(await store.get(b))).toString(), 'b');
    });

    it('deletes a blob: it no longer exists and reading it rejects with BlobNotFoundError', async () => {
      const key = newKey();
      await store.put(key, Readable.from([Buffer.from('short-lived')]));
      await store.delete(key);
      await isNotFound(store, key);
    });

    it('succeeds in deleting a key that holds nothing, twice', async () => {
      const key = newKey();
      await store.delete(key);
      await store.delete(key);
      await isNotFound(store, key);
    });

    it('rejects reading a key that never held anything with BlobNotFoundError', async () => {
      await isNotFound(store, newKey());
    });

    it('does not take the folder of a key for a blob', async () => {
      const key = newKey();
      await store.put(`${key}/inner`, Readable.from([Buffer.from('nested')]));
      await isNotFound(store, key);
      await store.delete(key);
      assert.equal(await store.exists(`${key}/inner`), true);
    });

    for (const [where, failAfter, total] of [
      ['before the first part is complete', 128 * 1024, 1 * MiB],
      ['after several megabytes', 18 * MiB, 24 * MiB],
    ] as const) {
      it(`rejects a put whose source fails ${where}, and leaves nothing under the key`, async function () {
        this.timeout(120_000);
        const key = newKey();
        await assert.rejects(store.put(key, generated(total, failAfter).body), /the source failed midway/);
        await isNotFound(store, key);
      });
    }

    it('rejects a put whose source is destroyed midway without an error, and leaves nothing under the key', async () => {
      const key = newKey();
      let reads = 0;
      const body = new Readable({
        read() {
          if (reads++ === 0) this.push(Buffer.alloc(64 * 1024, 1));
          else this.destroy();
        },
      });
      await assert.rejects(store.put(key, body));
      await isNotFound(store, key);
    });

    for (const unsafe of ['../x', '/etc/passwd', 'files/../../x', 'files/./x', '', 'files//x', 'files/x/', 'a\\b', '.incoming/x']) {
      it(`rejects the unsafe key '${unsafe}' in every operation`, async () => {
        await assert.rejects(store.put(unsafe, Readable.from([Buffer.from('x')])), /unsafe blob key/);
        await assert.rejects(store.get(unsafe), /unsafe blob key/);
        await assert.rejects(store.exists(unsafe), /unsafe blob key/);
        await assert.rejects(store.delete(unsafe), /unsafe blob key/);
      });
    }

    it('passes its readiness check', async () => {
      await store.check();
    });

    it('fails its readiness check when its storage cannot be reached', async () => {
      await assert.rejects((await opened.unreachable()).check());
    });
  });
}

blobStoreContract('filesystem', async () => {
  const root = await mkdtemp(join(tmpdir(), 'agentplane-blobs-'));
  return {
    open: () => new FilesystemBlobStore(join(root, 'store')).init(),
    async unreachable() {
      const gone = await new FilesystemBlobStore(join(root, 'gone')).init();
      await rm(join(root, 'gone'), { recursive: true, force: true });
      return gone;
    },
    close: () => rm(root, { recursive: true, force: true }),
  };
});

blobStoreContract('S3 (MinIO)', async () => {
  const server = await minio();
  const settings: S3Settings = {
    endpoint: server.endpoint,
    bucket: `agentplane-test-${randomBytes(6).toString('hex')}`,
    accessKey: server.accessKey,
    secretKey: server.secretKey,
  };
  return {
    open: () => new S3BlobStore(settings).init(),
    unreachable: async () => new S3BlobStore({ ...settings, endpoint: `http://127.0.0.1:${await freePort()}` }),
    close: async () => {},
  };
});

describe('S3 blob store setup', () => {
  let server: Awaited<ReturnType<typeof minio>>;
  const settingsFor = (bucket: string): S3Settings => ({
    endpoint: server.endpoint,
    bucket,
    accessKey: server.accessKey,
    secretKey: server.secretKey,
  });

  before(async function () {
    this.timeout(120_000);
    server = await minio();
  });

  it('creates a missing bucket, and init on the existing bucket is fine and sees the same blobs', async () => {
    const bucket = `agentplane-init-${randomBytes(6).toString('hex')}`;
    const first = await new S3BlobStore(settingsFor(bucket)).init();
    await first.put('files/p/kept', Readable.from([Buffer.from('still here')]));
    const again = await first.init();
    const second = await new S3BlobStore(settingsFor(bucket)).init();
    assert.equal((await read(await again.get('files/p/kept'))).toString(), 'still here');
    assert.equal((await read(await second.get('files/p/kept'))).toString(), 'still here');
  });

  it('fails its readiness check when its bucket does not exist', async () => {
    const store = new S3BlobStore(settingsFor(`agentplane-missing-${randomBytes(6).toString('hex')}`));
    await assert.rejects(store.check(), /bucket/);
  });

  it('rejects wrong credentials', async () => {
    const store = new S3BlobStore({ ...settingsFor(`agentplane-creds-${randomBytes(6).toString('hex')}`), secretKey: 'not-the-secret' });
    await assert.rejects(store.init());
  });
});

describe('filesystem blob store writes', () => {
  it('leave no partial file behind when the source fails before the file has opened, however often', async () => {
    const root = await mkdtemp(join(tmpdir(), 'agentplane-blobs-'));
    try {
      const store = await new FilesystemBlobStore(root).init();
      for (let i = 0; i < 300; i++) {
        const failing = new Readable({
          read() {
            this.destroy(new Error('source failed'));
          },
        });
        await assert.rejects(store.put(`files/p/${i}`, failing), /source failed/);
      }
      assert.deepEqual(await readdir(join(root, '.incoming')), []);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
