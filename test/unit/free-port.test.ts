import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { freePort } from '../../cli/embedded.js';

async function kernelRange(): Promise<number[]> {
  return (await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')).trim().split(/\s+/).map(Number);
}

function listen(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
  });
}

describe('the port a service is started on', () => {
  it('is one the kernel does not hand to client sockets or to binds on port 0 while the service starts', async () => {
    const [low = 0, high = 0] = await kernelRange();
    const ports = await Promise.all(Array.from({ length: 40 }, () => freePort()));
    for (const port of ports) assert.ok(port < low || port > high, `port ${port} is in the kernel's range ${low}-${high}`);
    assert.equal(new Set(ports).size, ports.length, 'a port was handed out twice');
    for (const port of ports) await listen(port);
  });
});
