/**
 * HTTP servers whose keep-alive timeout closes a connection only when it is idle.
 *
 * Node closes a kept-alive connection when its timer fires. After the process has been stopped or starved for
 * longer than the timeout (a paused pod, a saturated node), the timer fires on resume before the loop has read
 * the sockets: a request the client sent in the meantime is still unread, and closing a socket with unread bytes
 * sends a reset, which loses that request on the client's side. Here the close waits until the loop has polled
 * the socket once, and a connection that has received bytes meanwhile stays open.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';

type ServerSocket = Socket & { _httpMessage?: unknown };

function closeIdleConnectionsOnlyWhenIdle(server: Server): void {
  // A listener here replaces Node's own handling, which destroys the socket.
  server.on('timeout', (socket: ServerSocket) => {
    // An answer under way: the timeout is not the keep-alive one, and Node would end the connection.
    if (socket._httpMessage) {
      socket.destroy();
      return;
    }
    const seen = socket.bytesRead;
    // Immediates run after the loop's poll phase: any bytes waiting on the socket have been read by then.
    // Bytes that arrived begin a request, which the server's headers and request timeouts bound from then on.
    setImmediate(() => {
      if (!socket.destroyed && socket.bytesRead === seen) socket.destroy();
    });
  });
}

/** `http.createServer(listener)`, with keep-alive connections closed only when idle. */
export function createHttpServer(listener?: RequestListener): Server {
  const server = createServer(listener);
  closeIdleConnectionsOnlyWhenIdle(server);
  return server;
}
