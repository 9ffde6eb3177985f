import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

// Every request draws an id (its request id), and a call into the CSPRNG per id took several
// microseconds, a noticeable share of a GET. So random bytes come in blocks, each byte used once, as
// Node does for crypto.randomUUID.
const entropy = Buffer.alloc(4096);
let used = entropy.length;

function randomByte(): number {
  if (used === entropy.length) {
    randomFillSync(entropy);
    used = 0;
  }
  return entropy[used++]!;
}

/** A prefixed random id, e.g. `file_3kT9…`: 24 base62 characters, about 142 bits. */
export function newId(prefix: string, length = 24): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < 248) out += ALPHABET[b % 62]; // 248 = 4 * 62: rejecting the rest keeps the choice uniform
  }
  return `${prefix}_${out}`;
}
