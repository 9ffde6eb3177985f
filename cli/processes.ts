/**
 * What the long-running roles share as `dev`, `api` and `worker` start them: the API's in api-process.ts, the
 * worker's in worker-process.ts, each loaded only by the commands that run it.
 */
import { createServer, type Server } from 'node:http';
import { ConfigError } from './config.js';

export interface Stoppable {
  stop(): Promise<void>;
}

/** `server` listening on `host:port`; a port already taken is a ConfigError naming PORT. */
export function listenOnPort(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new ConfigError(`${host}:${port} is already in use; set PORT to a free port.`) : err),
    );
    server.listen(port, host, () => resolve());
  });
}

/**
 * Fails at once, as `serveApi` would once everything else had started, when the API's port is taken: `dev`
 * checks it before it spends seconds starting PostgreSQL and Temporal only to stop them again.
 */
export async function assertPortFree(port: number, host: string): Promise<void> {
  const probe = createServer();
  await listenOnPort(probe, port, host);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}
