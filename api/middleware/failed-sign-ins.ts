/**
 * Failed sign-ins per client address, so that `POST /v1/sessions` cannot be used to guess keys at speed.
 * Counted in each API process (a guesser spread over the replicas gets each one's allowance): the count only
 * has to make guessing slow, and keeping it here costs the database nothing. The address is the one the
 * nearest proxy reports (app.maxIpsCount = 1), else the connection's.
 */
import { LRUCache } from 'lru-cache';
import { RateLimitError } from '../errors.js';

const WINDOW_MS = 60_000;
/** Failed sign-ins an address may make a minute unless the deployment says otherwise. */
export const DEFAULT_FAILED_SIGN_INS_PER_MINUTE = 10;

export class FailedSignIns {
  // One window per address, from its first failure; addresses beyond the bound lose their count first.
  private readonly windows = new LRUCache<string, { failures: number }>({ max: 100_000, ttl: WINDOW_MS, ttlAutopurge: false });

  constructor(private readonly perMinute = DEFAULT_FAILED_SIGN_INS_PER_MINUTE) {}

  /** Refuses, before the key is looked up, an address that has used up its failures for the minute. */
  refuseIfExhausted(address: string): void {
    const window = this.windows.get(address);
    if (!window || window.failures < this.perMinute) return;
    const retryAfter = Math.max(1, Math.ceil(this.windows.getRemainingTTL(address) / 1000));
    throw RateLimitError(
      'too_many_failed_sign_ins',
      `Too many failed sign-ins from this address; try again in ${retryAfter}s.`,
      retryAfter,
    );
  }

  record(address: string): void {
    const window = this.windows.get(address);
    if (window) window.failures++;
    else this.windows.set(address, { failures: 1 });
  }
}
