import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';

export interface ApiMetrics {
  registry: Registry;
  requestDuration: Histogram<'method' | 'route' | 'status'>;
}

export function createMetrics(): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'agentplane_' });
  const requestDuration = new Histogram({
    name: 'agentplane_http_request_duration_seconds',
    help: 'HTTP requests by route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
    registers: [registry],
  });
  return { registry, requestDuration };
}
