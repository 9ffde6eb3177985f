/**
 * A child process for tests of kept-alive connections across a stopped process: an HTTP server that answers each
 * request with the number of body bytes it read, and stops itself (SIGSTOP) once its first answer is written,
 * with its keep-alive timer running. The test continues it with SIGCONT.
 *
 * `node stopping-server.js agentplane` serves through the API's own server factory; `node` through Node's.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '../../api/idle-connections.js';

let answered = 0;

function countBody(req: IncomingMessage, res: ServerResponse): void {
  let bytes = 0;
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    // Node arms the keep-alive timer on 'finish' before this listener runs; the stop comes after it.
    if (++answered === 1) res.on('finish', () => setImmediate(() => process.kill(process.pid, 'SIGSTOP')));
    res.end(String(bytes));
  });
}

const server = process.argv[2] === 'agentplane' ? createHttpServer(countBody) : createServer(countBody);
// Node's timer is this plus a fixed second (HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER).
server.keepAliveTimeout = 1;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
