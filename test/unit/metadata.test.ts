import assert from 'node:assert/strict';
import { parseMetadata, MAX_METADATA_KEY_LENGTH, MAX_METADATA_PAIRS, MAX_METADATA_VALUE_LENGTH } from '../../api/routes/files/metadata.js';
import { ApiError } from '../../api/errors.js';

function rejects(fields: [string, string][], code: string, param: string | null = 'metadata'): void {
  assert.throws(
    () => parseMetadata(fields),
    (err: unknown) => {
      assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
      assert.equal(err.status, 400);
      assert.equal(err.type, 'invalid_request_error');
      assert.equal(err.code, code);
      assert.equal(err.param, param);
      return true;
    },
  );
}

const asJson = (pairs: Record<string, unknown>): [string, string][] => [['metadata', JSON.stringify(pairs)]];
const asBrackets = (pairs: Record<string, string>): [string, string][] =>
  Object.entries(pairs).map(([key, value]) => [`metadata[${key}]`, value]);
const pairsOf = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`key${i}`, `value${i}`]));

describe('parseMetadata', () => {
  it('returns an empty object when no metadata is given', () => {
    assert.deepEqual(parseMetadata([]), {});
  });

  it('reads a JSON object given in one `metadata` field', () => {
    assert.deepEqual(parseMetadata(asJson({ team: 'search', 'case id': '42' })), { team: 'search', 'case id': '42' });
  });

  it('reads `metadata[key]` fields, including keys with brackets and spaces', () => {
    assert.deepEqual(
      parseMetadata([
        ['metadata[team]', 'search'],
        ['metadata[a [b]]', 'x'],
        ['metadata[ ]', ''],
      ]),
      {
        team: 'search',
        'a [b]': 'x',
        ' ': '',
      },
    );
  });

  it('returns a plain object whose keys are only the given ones, even `__proto__`', () => {
    const metadata = parseMetadata([['metadata', '{"__proto__":"x","constructor":"y"}']]);
    assert.equal(Object.getPrototypeOf(metadata), Object.prototype);
    assert.deepEqual(Object.keys(metadata), ['__proto__', 'constructor']);
    assert.equal(Object.getOwnPropertyDescriptor(metadata, '__proto__')?.value, 'x');
    assert.equal(JSON.stringify(metadata), '{"__proto__":"x","constructor":"y"}');
  });

  for (const [form, build] of [
    ['a JSON object', asJson],
    ['`metadata[key]` fields', asBrackets],
  ] as const) {
    describe(`given as ${form}`, () => {
      it(`accepts exactly ${MAX_METADATA_PAIRS} pairs`, () => {
        assert.equal(Object.keys(parseMetadata(build(pairsOf(MAX_METADATA_PAIRS)))).length, MAX_METADATA_PAIRS);
      });

      it(`rejects ${MAX_METADATA_PAIRS + 1} pairs with metadata_too_many_pairs`, () => {
        rejects(build(pairsOf(MAX_METADATA_PAIRS + 1)), 'metadata_too_many_pairs');
      });

      it(`accepts a key of ${MAX_METADATA_KEY_LENGTH} characters and rejects one of ${MAX_METADATA_KEY_LENGTH + 1}`, () => {
        const longest = 'k'.repeat(MAX_METADATA_KEY_LENGTH);
        assert.deepEqual(parseMetadata(build({ [longest]: 'v' })), { [longest]: 'v' });
        rejects(build({ [`${longest}k`]: 'v' }), 'metadata_invalid_key');
      });

      it('counts characters, not UTF-16 code units, against the key and value limits', () => {
        const key = '🔑'.repeat(MAX_METADATA_KEY_LENGTH);
        const value = '🙂'.repeat(MAX_METADATA_VALUE_LENGTH);
        assert.deepEqual(parseMetadata(build({ [key]: value })), { [key]: value });
        rejects(build({ [`${key}🔑`]: 'v' }), 'metadata_invalid_key');
        rejects(build({ k: `${value}🙂` }), 'metadata_value_too_long', 'metadata[k]');
      });

      it(`accepts a value of ${MAX_METADATA_VALUE_LENGTH} characters and rejects one of ${MAX_METADATA_VALUE_LENGTH + 1}`, () => {
        const longest = 'v'.repeat(MAX_METADATA_VALUE_LENGTH);
        assert.deepEqual(parseMetadata(build({ k: longest })), { k: longest });
        rejects(build({ k: `${longest}v` }), 'metadata_value_too_long', 'metadata[k]');
      });

      it('rejects an empty key', () => {
        rejects(build({ '': 'v' }), 'metadata_invalid_key');
      });

      it('accepts an empty value', () => {
        assert.deepEqual(parseMetadata(build({ k: '' })), { k: '' });
      });
    });
  }

  it('rejects a key given twice as `metadata[key]` fields', () => {
    rejects(
      [
        ['metadata[team]', 'search'],
        ['metadata[team]', 'ads'],
      ],
      'invalid_metadata',
      'metadata[team]',
    );
  });

  it('rejects the `metadata` field given twice', () => {
    rejects([...asJson({ a: '1' }), ...asJson({ b: '2' })], 'invalid_metadata');
  });

  it('rejects both forms in one request', () => {
    rejects([...asJson({ a: '1' }), ['metadata[b]', '2']], 'invalid_metadata');
    rejects([['metadata[b]', '2'], ...asJson({ a: '1' })], 'invalid_metadata');
  });

  it('rejects JSON values that are not strings', () => {
    for (const value of [1, true, null, ['x'], { nested: 'x' }]) {
      rejects(asJson({ k: value }), 'metadata_invalid_value', 'metadata[k]');
    }
  });

  it('rejects a `metadata` field that is not a JSON object', () => {
    for (const text of ['not json', '', '[]', '["a"]', 'null', '"text"', '42']) {
      rejects([['metadata', text]], 'invalid_metadata');
    }
  });

  it('rejects fields that are neither form, naming them', () => {
    rejects([['metadata.team', 'x']], 'unknown_parameter', 'metadata.team');
    rejects([['metadata[team', 'x']], 'unknown_parameter', 'metadata[team');
  });
});
