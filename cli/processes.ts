/** The two long-running roles, API and worker, as `dev`, `api` and `worker` all start them. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../api/app.js';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createWorker, installRuntimeLogger } from '../workflows/worker.js';
import { scheduleMaintenance } from '../workflows/maintenance/client.js';
import type { Services } from './runtime.js';
import { ConfigError } from './config.js';

export interface Stoppable {
  stop(): Promise<void>;
}

export async function serveApi(services: Services, port: number, host: string): Promise<Stoppable & { url: string; server: Server }> {
  const { app } = createApp(services);
  const server = createServer(app.callback());
  // Uploads of 100 MB on slow links must not be cut off; idle sockets still are.
  server.requestTimeout = 30 * 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new ConfigError(`${host}:${port} is already in use; set PORT to a free port.`) : err),
    );
    server.listen(port, host, () => resolve());
  });
  const { port: actual } = server.address() as AddressInfo;
  const shownHost = ['0.0.0.0', '::', '127.0.0.1', '::1'].includes(host) ? 'localhost' : host;
  return {
    url: `http://${shownHost}:${actual}`,
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

export async function serveWorker(
  services: Services,
  temporalAddress: string,
  namespace: string,
  workflowBundle?: WorkflowBundleWithSourceMap,
): Promise<Stoppable> {
  installRuntimeLogger(services.log);
  // Once per cluster, not per worker: the schedule runs each round on whichever worker takes it.
  await scheduleMaintenance(services.temporal);
  const { worker, connection } = await createWorker({ db: services.db, blobs: services.blobs, temporalAddress, namespace, workflowBundle });
  const running = worker.run();
  return {
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
