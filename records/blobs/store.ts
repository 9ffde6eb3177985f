/** Where file bytes live. Both drivers pass the same test suite (test/integration/blob-store.test.ts). */
import type { Readable } from 'node:stream';

export interface BlobStore {
  /** Streams `body` to `key`. On failure nothing is left under `key`. */
  put(key: string, body: Readable): Promise<void>;
  /** The bytes under `key`; rejects with BlobNotFoundError when there are none. */
  get(key: string): Promise<Readable>;
  /** Removes `key`; removing a missing key succeeds. */
  delete(key: string): Promise<void>;
  exists(key: string): Promise<boolean>;
  /** Rejects when the store cannot be reached (readiness). */
  check(): Promise<void>;
}

export class BlobNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`no blob under ${key}`);
  }
}

/** Keys are built by the platform from ids, never from user input; this guards the invariant. */
export function assertSafeKey(key: string): void {
  if (!/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_.-]+)*$/.test(key) || key.split('/').some((part) => part === '..' || part === '.')) {
    throw new Error(`unsafe blob key: ${key}`);
  }
}
