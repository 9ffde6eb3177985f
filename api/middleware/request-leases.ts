/**
 * A key's (or a project's) requests per minute, served from memory out of leases taken from its window in PostgreSQL.
 * Each lease is sized to about a second of the key's recent traffic and at most 1% of its limit: a key
 * making a few requests leases one at a time and is counted exactly across replicas; a busy key costs one
 * upsert per second or so, not one per request. Replicas together never serve more than the limit; a
 * replica's unused lease is served by no other, so a key may be refused up to 1% of its limit early per
 * other replica.
 */
import type { Queryable } from '../../records/db.js';
import { leaseRequests, type LimitOf } from '../../records/rate-limits.js';

const LEASE_LASTS_MS = 1_000;
const LEASE_SHARE_OF_LIMIT = 0.01;
/** Past this many keys held, those whose window has closed are forgotten. */
const KEYS_HELD = 10_000;

export interface Allowance {
  allowed: boolean;
  limit: number;
  /** Requests the key has left in its window, less what other replicas hold unserved. */
  remaining: number;
  resetMs: number;
}

interface Held {
  limit: number;
  /** Leased and not yet served. */
  left: number;
  grantedInWindow: number;
  /** On this process's clock. */
  windowEndsAt: number;
  /** The window refused this process's last lease: refused from memory until it closes. */
  spent: boolean;
  leasedAt: number;
  leaseSize: number;
  leasing?: Promise<void>;
}

export class RequestLeases {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly db: Queryable,
    private readonly of: LimitOf = 'api_key',
  ) {}

  /** Serves one request of the key (or project), or says it is over its limit for the rest of the window. */
  async take(id: string, limit: number): Promise<Allowance> {
    for (;;) {
      const key = this.heldFor(id, limit);
      const now = Date.now();
      if (now < key.windowEndsAt && key.left > 0) {
        key.left--;
        return this.allowance(key, true, now);
      }
      if (now < key.windowEndsAt && key.spent) return this.allowance(key, false, now);
      if (!key.leasing) {
        key.leasing = this.lease(id, key).finally(() => (key.leasing = undefined));
      }
      await key.leasing;
    }
  }

  private heldFor(apiKeyId: string, limit: number): Held {
    const known = this.held.get(apiKeyId);
    if (known?.limit === limit) return known;
    if (known?.leasing) return known;
    if (!known && this.held.size >= KEYS_HELD) this.forgetClosedWindows();
    // A key seen first, or whose limit changed: its lease so far was measured against another limit.
    const fresh: Held = { limit, left: 0, grantedInWindow: 0, windowEndsAt: 0, spent: false, leasedAt: 0, leaseSize: 0 };
    this.held.set(apiKeyId, fresh);
    return fresh;
  }

  private async lease(id: string, key: Held): Promise<void> {
    const askedAt = Date.now();
    const wanted = this.nextLeaseSize(key, askedAt);
    const lease = await leaseRequests(this.db, this.of, id, key.limit, wanted);
    const now = Date.now();
    // A lease left over from a closed window is void: the row's count started again without it.
    if (now >= key.windowEndsAt) key.left = 0;
    key.left += lease.granted;
    key.grantedInWindow = lease.grantedInWindow;
    key.windowEndsAt = now + lease.resetMs;
    key.spent = lease.granted === 0;
    key.leasedAt = askedAt;
    key.leaseSize = Math.max(1, lease.granted);
  }

  /** About a second of the key's traffic as its last lease measured it: at most twice the last, and 1% of the limit. */
  private nextLeaseSize(key: Held, now: number): number {
    const most = Math.max(1, Math.floor(key.limit * LEASE_SHARE_OF_LIMIT));
    if (key.leaseSize === 0) return 1;
    const lasted = Math.max(1, now - key.leasedAt);
    const aSecondsWorth = Math.ceil((key.leaseSize * LEASE_LASTS_MS) / lasted);
    return Math.max(1, Math.min(most, key.leaseSize * 2, aSecondsWorth));
  }

  private allowance(key: Held, allowed: boolean, now: number): Allowance {
    return {
      allowed,
      limit: key.limit,
      remaining: Math.max(0, key.limit - key.grantedInWindow + key.left),
      resetMs: Math.max(0, key.windowEndsAt - now),
    };
  }

  private forgetClosedWindows(): void {
    const now = Date.now();
    for (const [id, key] of this.held) if (now >= key.windowEndsAt && !key.leasing) this.held.delete(id);
  }
}
