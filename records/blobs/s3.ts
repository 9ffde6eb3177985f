/** Blobs in an S3 bucket (MinIO, AWS S3 or any S3-compatible store) through the `minio` client. */
import { Client, S3Error } from 'minio';
import { Readable } from 'node:stream';
import { assertSafeKey, BlobNotFoundError, type BlobStore } from './store.js';

export interface S3Settings {
  endpoint: string;
  bucket: string;
  accessKey: string;
  secretKey: string;
  region?: string;
}

// Uploads of unknown length go up in parts of this size, buffered one at a time: it bounds memory.
const PART_SIZE = 8 * 1024 * 1024;

export class S3BlobStore implements BlobStore {
  private readonly client: Client;
  private readonly bucket: string;

  constructor(settings: S3Settings) {
    const url = new URL(settings.endpoint);
    this.client = new Client({
      endPoint: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      useSSL: url.protocol === 'https:',
      accessKey: settings.accessKey,
      secretKey: settings.secretKey,
      region: settings.region,
      partSize: PART_SIZE,
    });
    this.bucket = settings.bucket;
  }

  async init(): Promise<this> {
    if (!(await this.client.bucketExists(this.bucket))) {
      try {
        await this.client.makeBucket(this.bucket);
      } catch (err) {
        // Another replica created it first.
        if (!(err instanceof S3Error && (err.code === 'BucketAlreadyOwnedByYou' || err.code === 'BucketAlreadyExists'))) throw err;
      }
    }
    return this;
  }

  async put(key: string, body: Readable): Promise<void> {
    assertSafeKey(key);
    try {
      await this.upload(key, body);
    } catch (err) {
      await this.client.removeIncompleteUpload(this.bucket, key).catch(() => {});
      await this.client.removeObject(this.bucket, key).catch(() => {});
      throw err;
    }
  }

  /** A multipart upload cannot complete without a part, so a body that turns out empty goes up as an empty object. */
  private async upload(key: string, body: Readable): Promise<void> {
    const chunks = body[Symbol.asyncIterator]();
    const first = await chunks.next();
    if (first.done) {
      await this.client.putObject(this.bucket, key, Buffer.alloc(0));
      return;
    }
    const whole = Readable.from(
      (async function* () {
        yield first.value as Buffer;
        yield* chunks;
      })(),
    );
    // The client does not see a source stream's error, so it is raced against the upload.
    const failed = new Promise<never>((_, reject) => whole.once('error', reject));
    await Promise.race([this.client.putObject(this.bucket, key, whole), failed]);
  }

  async get(key: string): Promise<Readable> {
    assertSafeKey(key);
    try {
      return await this.client.getObject(this.bucket, key);
    } catch (err) {
      if (err instanceof S3Error && (err.code === 'NoSuchKey' || err.code === 'NotFound')) throw new BlobNotFoundError(key);
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    assertSafeKey(key);
    await this.client.removeObject(this.bucket, key);
  }

  async exists(key: string): Promise<boolean> {
    assertSafeKey(key);
    try {
      await this.client.statObject(this.bucket, key);
      return true;
    } catch (err) {
      if (err instanceof S3Error && (err.code === 'NotFound' || err.code === 'NoSuchKey')) return false;
      throw err;
    }
  }

  async check(): Promise<void> {
    if (!(await this.client.bucketExists(this.bucket))) throw new Error(`S3 bucket ${this.bucket} does not exist`);
  }
}
