import assert from 'node:assert/strict';
import { newId } from '../../records/ids.js';

const BASE62 = /^[0-9a-zA-Z]+$/;

describe('newId', () => {
  it('is the prefix, an underscore and 24 base62 characters', () => {
    for (const prefix of ['file', 'key', 'proj', 'evt']) {
      const id = newId(prefix);
      assert.match(id, new RegExp(`^${prefix}_[0-9a-zA-Z]{24}$`));
    }
  });

  it('takes another length when asked', () => {
    assert.match(newId('gi', 8), /^gi_[0-9a-zA-Z]{8}$/);
    assert.match(newId('node', 64), /^node_[0-9a-zA-Z]{64}$/);
  });

  it('never repeats over 100,000 ids', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 100_000; i++) ids.add(newId('file'));
    assert.equal(ids.size, 100_000);
  });

  it('draws from the whole alphabet, each character about equally often', () => {
    const counts = new Map<string, number>();
    const ids = 20_000;
    for (let i = 0; i < ids; i++) {
      const random = newId('x').slice(2);
      assert.match(random, BASE62);
      for (const char of random) counts.set(char, (counts.get(char) ?? 0) + 1);
    }
    assert.equal(counts.size, 62);
    // 480,000 draws over 62 characters: about 7,742 each; a modulo-biased mapping puts some 25% over.
    const expected = (ids * 24) / 62;
    for (const [char, count] of counts) {
      assert.ok(Math.abs(count - expected) < expected * 0.1, `'${char}' drawn ${count} times, expected about ${Math.round(expected)}`);
    }
  });
});
