/** The API as `dev` and `api` serve it. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../api/app.js';
import { answerParserRefusals } from '../api/parser-refusals.js';
import { createHttpServer } from '../api/idle-connections.js';
import type { ApiMetrics } from '../api/metrics.js';
import { EventStreamSlots } from '../api/event-stream-slots.js';
import { RunEventFeed } from '../records/run-event-feed.js';
import { ConfigError } from './config.js';
import { listenOnPort, type Stoppable } from './processes.js';
import type { Services } from './runtime.js';

export async function serveApi(
  services: Services,
  port: number,
  host: string,
): Promise<Stoppable & { url: string; server: Server; metricsUrl?: string }> {
  const runEvents = new RunEventFeed(services.db.connectionString, services.log).start();
  const { app, metrics } = createApp({ ...services, runEvents, streamSlots: new EventStreamSlots(services.eventStreamLimits) });
  const metricsServer = services.metricsPort === undefined ? null : await serveMetrics(metrics, services.metricsPort, host);
  const server = createHttpServer(app.callback());
  answerParserRefusals(server);
  // Uploads of 100 MB on slow links must not be cut off; idle sockets still are.
  server.requestTimeout = 30 * 60_000;
  await listenOnPort(server, port, host);
  const { port: actual } = server.address() as AddressInfo;
  const shownHost = ['0.0.0.0', '::', '127.0.0.1', '::1'].includes(host) ? 'localhost' : host;
  return {
    url: `http://${shownHost}:${actual}`,
    server,
    metricsUrl: metricsServer ? `http://${shownHost}:${(metricsServer.address() as AddressInfo).port}/metrics` : undefined,
    async stop() {
      await new Promise<void>((resolve) => (metricsServer ? metricsServer.close(() => resolve()) : resolve()));
      // Open event streams end first, so the server can close.
      await runEvents.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    },
  };
}

/**
 * The API's /metrics on a port of its own (AGENTPLANE_METRICS_PORT), for Prometheus inside the cluster: the
 * public port, which an ingress routes, then serves none.
 */
async function serveMetrics(metrics: ApiMetrics, port: number, host: string): Promise<Server> {
  const server = createHttpServer((req, res) => {
    if ((req.url ?? '/').split('?')[0] !== '/metrics' || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE' ? new ConfigError(`${host}:${port} is already in use; set AGENTPLANE_METRICS_PORT to a free port.`) : err,
      ),
    );
    server.listen(port, host, () => resolve());
  });
  return server;
}
