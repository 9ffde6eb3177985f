import assert from 'node:assert/strict';
import { dnsServersFromEnv, fairLookups, type Resolve } from '../../tools/outbound-lookups.js';

/** A resolver that answers each name only when the test says so. */
function heldResolver() {
  const asked: string[] = [];
  const answers = new Map<string, () => void>();
  const resolve: Resolve = (hostname, _options, callback) => {
    asked.push(hostname);
    answers.set(hostname, () => callback(null, [{ address: '93.184.215.14', family: 4 }]));
  };
  return { resolve, asked, answer: (name: string) => answers.get(name)!() };
}

describe('outbound name lookups', () => {
  it("lets another project's names through while one project's names never answer", () => {
    const resolver = heldResolver();
    const lookups = fairLookups(resolver.resolve, { atOnce: 2, perProject: 1, queueLimitMs: 60_000 });
    const settled: string[] = [];
    for (let i = 0; i < 40; i++) lookups('proj_slow')(`never-${i}.example`, { all: true }, () => settled.push(`never-${i}`));
    lookups('proj_other')('tools.example', { all: true }, (err) => settled.push(err ? `tools: ${err.message}` : 'tools'));
    assert.deepEqual(
      resolver.asked,
      ['never-0.example', 'tools.example'],
      'one lookup of the slow project at a time; the other project is asked at once',
    );
    resolver.answer('tools.example');
    assert.deepEqual(settled, ['tools']);
  });

  it('gives waiting projects their turns in order when a lookup ends, each its oldest name first', () => {
    const resolver = heldResolver();
    const lookups = fairLookups(resolver.resolve, { atOnce: 1, perProject: 1, queueLimitMs: 60_000 });
    for (const [project, name] of [
      ['a', 'a1'],
      ['a', 'a2'],
      ['b', 'b1'],
      ['c', 'c1'],
      ['b', 'b2'],
    ] as const)
      lookups(project)(`${name}.example`, { all: true }, () => {});
    for (const name of ['a1', 'b1', 'c1', 'a2', 'b2']) {
      assert.equal(resolver.asked.at(-1), `${name}.example`);
      resolver.answer(`${name}.example`);
    }
    assert.equal(resolver.asked.length, 5);
  });

  it('gives up a lookup that waited longer than the limit for its turn with ETIMEOUT, without asking the resolver', () => {
    const resolver = heldResolver();
    const lookups = fairLookups(resolver.resolve, { atOnce: 1, perProject: 1, queueLimitMs: -1 });
    const errors: (string | undefined)[] = [];
    lookups('a')('first.example', { all: true }, () => {});
    lookups('b')('late.example', { all: true }, (err) => errors.push((err as NodeJS.ErrnoException | null)?.code));
    resolver.answer('first.example');
    assert.deepEqual(resolver.asked, ['first.example']);
    assert.deepEqual(errors, ['ETIMEOUT']);
  });

  it('drops a waiting lookup whose request was given up, so it takes no turn', () => {
    const resolver = heldResolver();
    const lookups = fairLookups(resolver.resolve, { atOnce: 1, perProject: 1, queueLimitMs: 60_000 });
    const abandoned = new AbortController();
    lookups('a')('first.example', { all: true }, () => {});
    lookups('b', abandoned.signal)('abandoned.example', { all: true }, () => {});
    lookups('c')('next.example', { all: true }, () => {});
    abandoned.abort();
    resolver.answer('first.example');
    assert.deepEqual(resolver.asked, ['first.example', 'next.example']);
  });

  it('reads name servers from AGENTPLANE_DNS_SERVERS, and the system resolver when it is unset', () => {
    assert.deepEqual(dnsServersFromEnv({ AGENTPLANE_DNS_SERVERS: '10.0.0.10, [2001:db8::53]:5353' }), ['10.0.0.10', '[2001:db8::53]:5353']);
    assert.equal(dnsServersFromEnv({}), undefined);
    assert.equal(dnsServersFromEnv({ AGENTPLANE_DNS_SERVERS: ' ' }), undefined);
  });
});
