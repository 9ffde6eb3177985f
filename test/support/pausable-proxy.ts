/**
 * A TCP proxy on loopback that a test can cut the way a network partition does: while paused, connections
 * (open ones and new ones) are held and nothing passes, so a client's calls hang rather than being refused.
 * Resuming drops what was held, as a partition that heals breaks its connections, and clients reconnect;
 * letting through instead passes the connections made while paused on, late, as a slow network would.
 */
import { createServer, connect, type Socket } from 'node:net';

export interface PausableProxy {
  /** host:port to give the client in place of the target's. */
  address: string;
  pause(): void;
  resume(): void;
  /** Ends the pause, passing on the connections made during it. */
  letThrough(): void;
  stop(): Promise<void>;
}

export async function startPausableProxy(target: string): Promise<PausableProxy> {
  const at = target.lastIndexOf(':');
  const [targetHost, targetPort] = [target.slice(0, at), Number(target.slice(at + 1))];
  const open = new Set<Socket>();
  const held = new Set<Socket>();
  let paused = false;
  const track = (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const passOn = (client: Socket) => {
    const upstream = connect(targetPort, targetHost);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  };
  const server = createServer((client) => {
    track(client);
    if (!paused) return passOn(client);
    client.pause();
    held.add(client);
    client.once('close', () => held.delete(client));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    address: `127.0.0.1:${port}`,
    pause() {
      paused = true;
      for (const socket of open) {
        socket.unpipe();
        socket.pause();
      }
    },
    resume() {
      paused = false;
      held.clear();
      for (const socket of open) socket.destroy();
    },
    letThrough() {
      paused = false;
      for (const client of held) {
        held.delete(client);
        passOn(client);
        client.resume();
      }
    },
    async stop() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
