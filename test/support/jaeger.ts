/**
 * Jaeger v2, the OTLP trace backend the tracing tests and the benchmark export to, started on free loopback ports
 * (a config file of its own: other processes may hold Jaeger's defaults), keeping traces in memory; and reading
 * traces back through its query API.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, stopChild } from '../../cli/embedded.js';
import { findTool } from '../../cli/tools.js';
import { eventually } from './eventually.js';

export interface JaegerServer {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for a process exporting to it (OTLP over HTTP). */
  otlpEndpoint: string;
  /** The query API's root (`/api/traces`, `/api/services`). */
  queryUrl: string;
  stop(): Promise<void>;
}

/** A span as Jaeger's query API answers it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: 'CHILD_OF' | 'FOLLOWS_FROM'; traceID: string; spanID: string }[];
  startTime: number;
  duration: number;
  tags: { key: string; type: string; value: unknown }[];
  logs: { timestamp: number; fields: { key: string; value: unknown }[] }[];
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

function configOf(ports: { otlp: number; query: number; queryGrpc: number }): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${ports.query}
    grpc:
      endpoint: 127.0.0.1:${ports.queryGrpc}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${ports.otlp}
processors:
  batch:
    timeout: 50ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}

export async function startJaeger(): Promise<JaegerServer> {
  const ports = { otlp: await freePort(), query: await freePort(), queryGrpc: await freePort() };
  const dir = await mkdtemp(join(tmpdir(), 'agentplane-jaeger-'));
  const config = join(dir, 'jaeger.yaml');
  await writeFile(config, configOf(ports));
  let output = '';
  const child = spawn(findTool('jaeger'), ['--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  const collect = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-10_000));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const stop = async () => {
    await stopChild(child);
    await rm(dir, { recursive: true, force: true });
  };
  const queryUrl = `http://127.0.0.1:${ports.query}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`jaeger exited with ${child.exitCode}: ${output}`);
      const services = await fetch(`${queryUrl}/api/services`);
      if (!services.ok) throw new Error(`query API answered ${services.status}`);
      // The receiver listens too: an empty export is accepted.
      const otlp = await fetch(`http://127.0.0.1:${ports.otlp}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"resourceSpans":[]}',
      });
      if (!otlp.ok) throw new Error(`OTLP receiver answered ${otlp.status}`);
    },
    { timeoutMs: 30_000, message: 'Jaeger did not start' },
  ).catch(async (err) => {
    await stop();
    throw err;
  });
  return { otlpEndpoint: `http://127.0.0.1:${ports.otlp}`, queryUrl, stop };
}

/** A trace by id; null while Jaeger has none of its spans. */
export async function traceById(jaeger: JaegerServer, traceId: string): Promise<JaegerTrace | null> {
  const response = await fetch(`${jaeger.queryUrl}/api/traces/${traceId}`);
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`Jaeger answered ${response.status}: ${await response.text()}`);
  const body = (await response.json()) as { data: JaegerTrace[] | null };
  return body.data?.[0] ?? null;
}

/** The traces of `service` that have a span named `operation`, newest first. */
export async function tracesOf(jaeger: JaegerServer, service: string, operation?: string): Promise<JaegerTrace[]> {
  const query = new URLSearchParams({ service, limit: '200', lookback: '1h' });
  if (operation) query.set('operation', operation);
  const response = await fetch(`${jaeger.queryUrl}/api/traces?${query}`);
  if (!response.ok) throw new Error(`Jaeger answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { data: JaegerTrace[] | null }).data ?? [];
}

/** A span's tag value by key. */
export function tagOf(span: JaegerSpan, key: string): unknown {
  return span.tags.find((tag) => tag.key === key)?.value;
}
