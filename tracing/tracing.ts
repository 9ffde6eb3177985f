/**
 * Trace export over OTLP with the OpenTelemetry SDK, set up by the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_PROPAGATORS, …). With no endpoint set the SDK is never loaded and every span
 * helper is a no-op. Spans leave in batches, off the request's path.
 */
import { choosingIdGenerator } from './chosen-ids.js';
import { trace, context, propagation } from '@opentelemetry/api';
import { markTracing } from './context.js';

export interface RunningTracing {
  /** Exports the spans still buffered, then stops. */
  stop(): Promise<void>;
}

/** Whether the environment asks for trace export. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER && env.OTEL_TRACES_EXPORTER.split(',').every((name) => name.trim() === 'none')) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Registers the SDK for this process (`service`: its default service.name, e.g. `agentplane-api`), if the
 * environment asks for it; null otherwise.
 */
export async function startTracing(service: string, env: NodeJS.ProcessEnv = process.env): Promise<RunningTracing | null> {
  if (!tracingConfigured(env)) return null;
  const [{ NodeTracerProvider }, { BatchSpanProcessor, RandomIdGenerator }, { OTLPTraceExporter }, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new NodeTracerProvider({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) override the process's own name.
    resource: resources
      .defaultResource()
      .merge(resources.resourceFromAttributes({ 'service.name': service }))
      .merge(resources.detectResources({ detectors: [resources.envDetector] })),
    idGenerator: choosingIdGenerator(new RandomIdGenerator()),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  markTracing(true);
  return {
    stop: async () => {
      markTracing(false);
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
