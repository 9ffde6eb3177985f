import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A prefixed random id, e.g. `file_3kT9…`: 24 base62 characters, about 142 bits. */
export function newId(prefix: string, length = 24): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; i < bytes.length && out.length < length; i++) {
    const b = bytes[i]!;
    if (b < 248) out += ALPHABET[b % 62]; // 248 = 4 * 62: rejecting the rest keeps the choice uniform
  }
  return out.length === length ? `${prefix}_${out}` : newId(prefix, length);
}
