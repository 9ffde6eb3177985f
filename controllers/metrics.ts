/** The controller's Prometheus metrics, in a registry of its own, served at /metrics. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly reconciles = new Counter({
    name: 'agentplane_controller_reconciles_total',
    help: 'Reconcile passes, by kind and outcome (success, error).',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly durations = new Histogram({
    name: 'agentplane_controller_reconcile_duration_seconds',
    help: 'How long a reconcile pass took, by kind.',
    labelNames: ['kind'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly depth = new Gauge({
    name: 'agentplane_controller_queue_depth',
    help: 'Keys waiting in the work queue.',
    registers: [this.registry],
  });
  private readonly leading = new Gauge({
    name: 'agentplane_controller_leader',
    help: '1 while this replica is the leader.',
    registers: [this.registry],
  });
  private readonly watchRestarts = new Counter({
    name: 'agentplane_controller_watch_restarts_total',
    help: 'Watches restarted after an error, by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly relists = new Counter({
    name: 'agentplane_controller_relists_total',
    help: 'Full lists after the first, when a watch could not resume (410 Gone), by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  reconciled(kind: string, outcome: 'success' | 'error', seconds: number): void {
    this.reconciles.inc({ kind, outcome });
    this.durations.observe({ kind }, seconds);
  }

  queueDepth(n: number): void {
    this.depth.set(n);
  }

  leader(isLeader: boolean): void {
    this.leading.set(isLeader ? 1 : 0);
  }

  relisted(kind: string): void {
    this.relists.inc({ kind });
  }

  watchRestarted(kind: string): void {
    this.watchRestarts.inc({ kind });
  }
}
