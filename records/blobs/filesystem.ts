/** Blobs as files under one directory; writes land in a temporary file and are renamed into place. */
import { createReadStream } from 'node:fs';
import { access, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { assertSafeKey, BlobNotFoundError, type BlobStore } from './store.js';

export class FilesystemBlobStore implements BlobStore {
  private readonly tmp: string;

  constructor(private readonly root: string) {
    this.tmp = join(root, '.incoming');
  }

  async init(): Promise<this> {
    await mkdir(this.tmp, { recursive: true });
    // Partial writes from a process that died mid-upload.
    const cutoff = Date.now() - 3600_000;
    for (const name of await readdir(this.tmp)) {
      const path = join(this.tmp, name);
      const info = await stat(path).catch(() => null);
      if (info && info.mtimeMs < cutoff) await rm(path, { force: true });
    }
    return this;
  }

  async put(key: string, body: Readable): Promise<void> {
    const target = this.path(key);
    const partial = join(this.tmp, randomUUID());
    // The source may fail while the file opens; pipeline reports that failure once it takes over.
    const ignoreUntilPiped = () => {};
    body.on('error', ignoreUntilPiped);
    // Opened before streaming: a write stream opens lazily, and could create the file after a failed
    // write's clean-up had already run.
    const file = await open(partial, 'wx');
    try {
      await pipeline(body, file.createWriteStream());
      await mkdir(dirname(target), { recursive: true });
      await rename(partial, target);
    } catch (err) {
      await file.close().catch(() => {});
      await rm(partial, { force: true });
      throw err;
    } finally {
      body.off('error', ignoreUntilPiped);
    }
  }

  async get(key: string): Promise<Readable> {
    const path = this.path(key);
    if (!(await isFile(path))) throw new BlobNotFoundError(key);
    return createReadStream(path);
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key);
    if (await isFile(path)) await rm(path, { force: true });
  }

  async exists(key: string): Promise<boolean> {
    return isFile(this.path(key));
  }

  async check(): Promise<void> {
    await access(this.tmp);
  }

  private path(key: string): string {
    assertSafeKey(key);
    return join(this.root, key);
  }
}

// A key that is the folder of other keys (`a` beside `a/b`) holds no blob, as in an S3 bucket.
async function isFile(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isFile(),
    () => false,
  );
}
