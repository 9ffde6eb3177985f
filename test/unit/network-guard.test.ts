import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import { guardedLookup, guardedRequest, isPublicAddress, PrivateTargetError } from '../../tools/network-guard.js';

/** Runs the guard's lookup over a resolver that answers `addresses`, as a socket would call it. */
function lookUp(allowPrivate: boolean, addresses: LookupAddress[], all: boolean): Promise<unknown> {
  const lookup = guardedLookup(allowPrivate, (_host, _options, callback) => callback(null, addresses));
  return new Promise((resolve, reject) =>
    lookup('tools.example.com', { all }, (err: Error | null, address: unknown) => (err ? reject(err) : resolve(address))),
  );
}

describe('the network guard', () => {
  // The test processes set loopback only (test/support/hooks.ts); each test here says what it needs.
  const set = process.env.AGENTPLANE_OUTBOUND_NETWORKS;
  beforeEach(() => delete process.env.AGENTPLANE_OUTBOUND_NETWORKS);
  after(() => (process.env.AGENTPLANE_OUTBOUND_NETWORKS = set));

  it('counts only globally routable unicast addresses as public', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700::1111', '::ffff:8.8.8.8']) assert.equal(isPublicAddress(a), true, a);
    const refused = [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:169.254.169.254',
      '64:ff9b::a00:1',
      '2002:a00:1::',
      'ff02::1',
      // IPv4-compatible (::/96): whatever IPv4 address they carry.
      '::7f00:1',
      '::127.0.0.1',
      '::a9fe:a9fe',
      '::808:808',
      '0:0:0:0:0:0:a00:1',
      'not-an-address',
    ];
    for (const a of refused) assert.equal(isPublicAddress(a), false, a);
  });

  it('hands a socket the addresses of a name that resolves to public addresses only', async () => {
    const addresses = [
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ];
    assert.deepEqual(await lookUp(false, addresses, true), addresses);
    assert.equal(await lookUp(false, addresses, false), '93.184.215.14');
  });

  it('refuses a name when any of its addresses is private, so the socket never connects to it', async () => {
    const mixed = [
      { address: '93.184.215.14', family: 4 },
      { address: '169.254.169.254', family: 4 },
    ];
    await assert.rejects(
      lookUp(false, mixed, true),
      (err: unknown) => err instanceof PrivateTargetError && /169\.254\.169\.254/.test(err.message),
    );
    await assert.rejects(lookUp(false, [{ address: '::ffff:10.0.0.1', family: 6 }], false), PrivateTargetError);
  });

  it('lets private answers through when private addresses are allowed', async () => {
    assert.equal(await lookUp(true, [{ address: '127.0.0.1', family: 4 }], false), '127.0.0.1');
  });

  it('refuses an address outside the networks the deployment names, private targets allowed or not, and says which setting refused it', async () => {
    process.env.AGENTPLANE_OUTBOUND_NETWORKS = '127.0.0.0/8, ::1/128';
    assert.equal(await lookUp(true, [{ address: '127.0.0.1', family: 4 }], false), '127.0.0.1');
    assert.equal(await lookUp(true, [{ address: '::1', family: 6 }], false), '::1');
    assert.equal(await lookUp(true, [{ address: '::ffff:127.0.0.1', family: 6 }], false), '::ffff:127.0.0.1');
    for (const [allowPrivate, address] of [
      [true, '10.1.2.3'],
      [false, '93.184.215.14'],
      [true, '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    ] as const) {
      // Where private targets are allowed, one answer outside the networks refuses the name like any other.
      const answers: LookupAddress[] = [{ address, family: address.includes(':') ? 6 : 4 }];
      if (allowPrivate) answers.unshift({ address: '127.0.0.1', family: 4 });
      await assert.rejects(
        lookUp(allowPrivate, answers, true),
        (err: unknown) =>
          err instanceof PrivateTargetError && err.message.includes(address) && err.message.includes('AGENTPLANE_OUTBOUND_NETWORKS'),
        address,
      );
    }
    // The rule on private addresses still comes first where private targets are refused.
    await assert.rejects(lookUp(false, [{ address: '127.0.0.1', family: 4 }], false), /not a public address/);
  });

  it('refuses a literal address outside the outbound networks before connecting to it', async () => {
    let connections = 0;
    const server = createServer((_req, res) => res.end('reached'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
    const request = { projectId: 'proj_guard', method: 'GET', headers: {}, signal: new AbortController().signal, allowPrivate: true };
    try {
      process.env.AGENTPLANE_OUTBOUND_NETWORKS = '::1/128';
      await assert.rejects(guardedRequest(url, request), /127\.0\.0\.1 is outside the networks this deployment reaches/);
      assert.equal(connections, 0);
      process.env.AGENTPLANE_OUTBOUND_NETWORKS = '127.0.0.0/8';
      const response = await guardedRequest(url, request);
      response.resume();
      assert.equal(response.statusCode, 200);
      assert.equal(connections, 1);
    } finally {
      server.close();
    }
  });
});
