import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { guardedLookup, isPublicAddress, PrivateTargetError } from '../../tools/network-guard.js';

/** Runs the guard's lookup over a resolver that answers `addresses`, as a socket would call it. */
function lookUp(allowPrivate: boolean, addresses: LookupAddress[], all: boolean): Promise<unknown> {
  const lookup = guardedLookup(allowPrivate, (_host, _options, callback) => callback(null, addresses));
  return new Promise((resolve, reject) =>
    lookup('tools.example.com', { all }, (err: Error | null, address: unknown) => (err ? reject(err) : resolve(address))),
  );
}

describe('the network guard', () => {
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
});
