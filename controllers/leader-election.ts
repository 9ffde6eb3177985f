/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: a candidate takes the lease when
 * it is free or expired, the leader renews it every retry period and steps down if it cannot renew within
 * the renew deadline, and a leader that stops clears the holder so a standby takes over at once. Every
 * write carries the resourceVersion it read, so two candidates never both win.
 */
import { CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';

export interface LeaderElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  onChange?: (isLeader: boolean) => void;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private leading = false;
  private lease: V1Lease | undefined;

  constructor(private readonly options: LeaderElectionOptions) {
    this.api = options.kubeConfig.makeApiClient(CoordinationV1Api);
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until `signal` aborts. Each time it wins, `lead(leadSignal)` runs; `leadSignal` aborts when
   * leadership is lost or the election stops, and the lease is released once `lead` has returned.
   */
  async run(lead: (leadSignal: AbortSignal) => Promise<void>, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (!(await this.tryAcquireOrRenew())) {
        await sleep(this.retryPeriodMs, signal);
        continue;
      }
      this.setLeading(true);
      const leadership = new AbortController();
      const stop = () => leadership.abort();
      signal.addEventListener('abort', stop, { once: true });
      const leading = lead(leadership.signal).catch((err) => this.options.log.error({ err }, 'the leader stopped with an error'));
      let renewedAt = Date.now();
      while (!leadership.signal.aborted) {
        await sleep(this.retryPeriodMs, leadership.signal);
        if (leadership.signal.aborted) break;
        if (await this.tryAcquireOrRenew()) renewedAt = Date.now();
        else if (Date.now() - renewedAt > this.renewDeadlineMs) {
          this.options.log.warn({ lease: this.options.name }, 'could not renew the lease in time; stepping down');
          leadership.abort();
        }
      }
      signal.removeEventListener('abort', stop);
      this.setLeading(false);
      await leading;
      if (signal.aborted) await this.release();
    }
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return;
    this.leading = leading;
    this.options.log.info({ lease: `${this.options.namespace}/${this.options.name}`, identity: this.options.identity }, leading ? 'became the leader' : 'no longer the leader');
    this.options.onChange?.(leading);
  }

  /** True when this candidate holds the lease after the call. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const now = new Date();
    try {
      const current = await this.api.readNamespacedLease({ namespace, name }).catch((err: { code?: number }) => {
        if (err.code === 404) return null;
        throw err;
      });
      if (!current) {
        this.lease = await this.api.createNamespacedLease({
          namespace,
          body: { metadata: { name, namespace }, spec: { holderIdentity: identity, leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000), acquireTime: now, renewTime: now, leaseTransitions: 0 } },
        });
        return true;
      }
      const spec = current.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      const renewed = spec.renewTime ? new Date(spec.renewTime).getTime() : 0;
      const duration = (spec.leaseDurationSeconds ?? Math.ceil(this.leaseDurationMs / 1000)) * 1000;
      const ours = holder === identity;
      if (!ours && holder !== '' && renewed + duration > now.getTime()) return false;
      current.spec = {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
        renewTime: now,
        ...(ours ? {} : { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }),
      };
      this.lease = await this.api.replaceNamespacedLease({ namespace, name, body: current });
      return true;
    } catch (err) {
      // 409: another candidate wrote first. Anything else: the API server is unreachable; not leading either way.
      this.options.log.debug({ err }, 'lease not acquired or renewed');
      return false;
    }
  }

  /** Clears the holder so a standby need not wait for the lease to expire. */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    if (!this.lease || this.lease.spec?.holderIdentity !== identity) return;
    try {
      const current = await this.api.readNamespacedLease({ namespace, name });
      if (current.spec?.holderIdentity !== identity) return;
      current.spec = { ...current.spec, holderIdentity: '', renewTime: new Date() };
      await this.api.replaceNamespacedLease({ namespace, name, body: current });
      this.options.log.info({ lease: `${namespace}/${name}` }, 'lease released');
    } catch (err) {
      this.options.log.warn({ err }, 'could not release the lease; a standby takes over when it expires');
    }
  }
}
