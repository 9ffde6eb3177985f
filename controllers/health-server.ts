/** `/healthz` (the process works), `/readyz` (its watches are synced) and `/metrics`, on their own port. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ControllerMetrics } from './metrics.js';
import { ControllerConfigError } from './config.js';

export interface HealthServer {
  url: string;
  close(): Promise<void>;
}

export async function startHealthServer(options: {
  host: string;
  port: number;
  live: () => boolean;
  ready: () => boolean;
  metrics: ControllerMetrics;
}): Promise<HealthServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const ok = path === '/healthz' ? options.live() : options.ready();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ok' : 'unavailable' }));
      return;
    }
    if (path === '/metrics') {
      options.metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': options.metrics.registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'not found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new ControllerConfigError(`${options.host}:${options.port} is already in use; set AGENTPLANE_PROBE_PORT to a free port.`)
          : err,
      ),
    );
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
