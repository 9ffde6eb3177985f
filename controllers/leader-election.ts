/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: a candidate takes the lease when
 * it is free or expired, the leader renews it every retry period and steps down if it cannot renew within
 * the renew deadline, and a leader that stops clears the holder so a standby takes over at once. Every
 * write carries the resourceVersion it read, so two candidates never both win.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { kubeRequest, microTime } from './kube-request.js';

/** A Lease as the API server sends it; times as MicroTime strings. */
interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

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
    const wake = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    signal.addEventListener('abort', wake, { once: true });
  });

export class LeaderElector {
  private readonly path: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private leading = false;
  private lease: Lease | undefined;

  constructor(private readonly options: LeaderElectionOptions) {
    this.path = `/apis/coordination.k8s.io/v1/namespaces/${options.namespace}/leases`;
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
    this.options.log.info(
      { lease: `${this.options.namespace}/${this.options.name}`, identity: this.options.identity },
      leading ? 'became the leader' : 'no longer the leader',
    );
    this.options.onChange?.(leading);
  }

  private async read(): Promise<Lease | null> {
    const { status, body } = await kubeRequest<Lease>(this.options.kubeConfig, 'GET', `${this.path}/${this.options.name}`);
    if (status === 404) return null;
    if (status !== 200) throw new Error(`reading the lease answered ${status}`);
    return body;
  }

  private async write(method: 'POST' | 'PUT', lease: Lease): Promise<boolean> {
    const path = method === 'POST' ? this.path : `${this.path}/${this.options.name}`;
    const { status, body } = await kubeRequest<Lease>(this.options.kubeConfig, method, path, lease);
    if (status === 200 || status === 201) {
      this.lease = body;
      return true;
    }
    // 409: another candidate wrote first.
    if (status !== 409) this.options.log.debug({ status }, 'lease write refused');
    return false;
  }

  /** True when this candidate holds the lease after the call. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const now = new Date();
    const durationSeconds = Math.ceil(this.leaseDurationMs / 1000);
    try {
      const current = await this.read();
      if (!current) {
        return await this.write('POST', {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
      }
      const spec = current.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      const renewed = spec.renewTime ? new Date(spec.renewTime).getTime() : 0;
      const duration = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      const ours = holder === identity;
      if (!ours && holder !== '' && renewed + duration > now.getTime()) return false;
      return await this.write('PUT', {
        ...current,
        spec: {
          ...spec,
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          renewTime: microTime(now),
          ...(ours ? {} : { acquireTime: microTime(now), leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }),
        },
      });
    } catch (err) {
      // The API server is unreachable: not leading, and nothing to undo.
      this.options.log.debug({ err }, 'lease not acquired or renewed');
      return false;
    }
  }

  /** Clears the holder so a standby need not wait for the lease to expire. */
  private async release(): Promise<void> {
    const { identity } = this.options;
    if (this.lease?.spec?.holderIdentity !== identity) return;
    try {
      const current = await this.read();
      if (current?.spec?.holderIdentity !== identity) return;
      if (await this.write('PUT', { ...current, spec: { ...current.spec, holderIdentity: '', renewTime: microTime() } })) {
        this.options.log.info({ lease: `${this.options.namespace}/${this.options.name}` }, 'lease released');
      }
    } catch (err) {
      this.options.log.warn({ err }, 'could not release the lease; a standby takes over when it expires');
    }
  }
}
