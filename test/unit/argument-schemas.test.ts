import assert from 'node:assert/strict';
import {
  argumentsValidator,
  CompiledSchemas,
  MAX_PARAMETERS_BYTES,
  MAX_PARAMETERS_DEPTH,
  MAX_PARAMETERS_NODES,
  MAX_PARAMETERS_PATTERNS,
} from '../../tools/argument-schemas.js';
import { toolDefinitionProblems, type HttpToolDefinition } from '../../tools/definitions.js';

const tool = (parameters: Record<string, unknown>, name = 'lookup'): HttpToolDefinition => ({
  type: 'http',
  name,
  url: 'https://tools.example.com/lookup',
  parameters,
});
const problems = (parameters: Record<string, unknown>) => toolDefinitionProblems([tool(parameters)], { allowPrivate: false });
const withPattern = (pattern: string) => ({ type: 'object', properties: { q: { type: 'string', pattern } } });

/** A schema nesting `levels` objects in all, the schema itself included. */
function nested(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  // Each `properties: { p: … }` adds two levels: the properties object and the subschema.
  for (let level = 1; level + 2 <= levels; level += 2) schema = { type: 'object', properties: { p: schema } };
  return schema;
}

describe('tool argument schemas', () => {
  it('matches a pattern with nested quantifiers against a long near-match at once, and says the arguments do not match', () => {
    // A backtracking engine takes hours over this; the worker's event loop would be held all that time.
    const check = argumentsValidator(withPattern('^(a+)+$'));
    assert.match(check({ q: `${'a'.repeat(40)}!` }) ?? '', /arguments\/q must match pattern "\^\(a\+\)\+\$"/);
    assert.equal(check({ q: 'a'.repeat(40) }), null);
  });

  it('matches patternProperties and propertyNames patterns in linear time too', () => {
    const check = argumentsValidator({
      type: 'object',
      patternProperties: { '^(a+)+$': { type: 'integer' } },
      propertyNames: { pattern: '^(b|bb)+$' },
    });
    assert.notEqual(check({ [`${'b'.repeat(40)}!`]: 1 }), null);
    assert.equal(check({ bbb: 'not checked by patternProperties' }), null);
    assert.notEqual(check({ [`${'a'.repeat(40)}!`]: 1 }), null);
  });

  it('keeps the usual pattern syntax: classes, escapes, quantifiers, named groups and Unicode properties', () => {
    const check = argumentsValidator(withPattern('^(?<word>[\\p{L}\\d_-]{2,8})\\/\\u00e9$'));
    assert.equal(check({ q: 'Ünïcode1/é' }), null);
    assert.notEqual(check({ q: 'a/é' }), null);
  });

  it('refuses when saved a pattern with a backreference or lookaround, naming the pattern', () => {
    for (const pattern of ['^(a)\\1$', '^(?=a)a', '(?<!x)y', 'a(?!b)']) {
      const found = problems(withPattern(pattern));
      assert.deepEqual(
        found.map((p) => p.param),
        ['tools.0.parameters'],
        pattern,
      );
      assert.match(
        found[0]!.message,
        /is not a usable JSON Schema: the pattern .* is not supported \(patterns are matched in linear time, without backreferences or lookaround\)/,
        pattern,
      );
      assert.ok(found[0]!.message.includes(JSON.stringify(pattern)), found[0]!.message);
    }
    assert.equal(problems({ type: 'object', patternProperties: { '(?=x)': {} } }).length, 1);
  });

  it(`refuses when saved parameters over ${MAX_PARAMETERS_BYTES} bytes of JSON or nested deeper than ${MAX_PARAMETERS_DEPTH} levels, and takes them at the limits`, () => {
    const wide = (chars: number) => ({ type: 'object', description: 'x'.repeat(chars) });
    const atLimit = MAX_PARAMETERS_BYTES - JSON.stringify(wide(0)).length;
    assert.deepEqual(problems(wide(atLimit)), []);
    assert.deepEqual(problems(wide(atLimit + 1)), [
      {
        param: 'tools.0.parameters',
        message: `is ${MAX_PARAMETERS_BYTES + 1} bytes as JSON, more than the ${MAX_PARAMETERS_BYTES} allowed`,
      },
    ]);
    assert.deepEqual(problems(nested(MAX_PARAMETERS_DEPTH - 1)), []);
    assert.deepEqual(problems(nested(MAX_PARAMETERS_DEPTH + 1)), [
      { param: 'tools.0.parameters', message: `nests objects and arrays deeper than ${MAX_PARAMETERS_DEPTH} levels, the most allowed` },
    ]);
  });

  it(`refuses when saved parameters holding more than ${MAX_PARAMETERS_NODES} objects and arrays, which would take long to compile`, () => {
    // The schema and its properties object are two; each property's subschema one more.
    const wide = (count: number) => ({
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, { type: 'string' }])),
    });
    assert.deepEqual(problems(wide(MAX_PARAMETERS_NODES - 2)), []);
    assert.deepEqual(problems(wide(MAX_PARAMETERS_NODES - 1)), [
      { param: 'tools.0.parameters', message: `holds more than ${MAX_PARAMETERS_NODES} objects and arrays, the most allowed` },
    ]);
  });

  it(`refuses when saved parameters using more than ${MAX_PARAMETERS_PATTERNS} patterns`, () => {
    const patterned = (count: number) => ({
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, { type: 'string', pattern: `^${i}-[a-z]+$` }])),
    });
    assert.deepEqual(problems(patterned(MAX_PARAMETERS_PATTERNS)), []);
    assert.deepEqual(problems(patterned(MAX_PARAMETERS_PATTERNS + 1)), [
      {
        param: 'tools.0.parameters',
        message: `is not a usable JSON Schema: it uses more than ${MAX_PARAMETERS_PATTERNS} patterns, the most allowed`,
      },
    ]);
  });

  it('refuses a schema that declares another JSON Schema dialect', () => {
    const found = problems({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' });
    assert.match(found[0]!.message, /only JSON Schema 2020-12/);
    assert.deepEqual(problems({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }), []);
  });

  it('refuses when saved parameters that refer to themselves without end, and says so of the arguments only some values lead into it', () => {
    const endless = /^refers to itself without end: a `\$ref` or `\$dynamicRef` leads back to itself/;
    for (const parameters of [
      { type: 'object', $ref: '#' },
      { type: 'object', allOf: [{ $ref: '#' }] },
      { type: 'object', anyOf: [{ required: ['q'] }, { $ref: '#/$defs/again' }], $defs: { again: { not: { $ref: '#' } } } },
      { type: 'object', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' },
      { type: 'object', $dynamicAnchor: 'meta', $dynamicRef: '#meta' },
    ]) {
      const found = problems(parameters);
      assert.equal(found.length, 1, JSON.stringify(parameters));
      assert.match(found[0]!.message, endless);
    }
    // A schema that recurses into a property's value is fine: the value's depth ends it.
    assert.deepEqual(problems({ type: 'object', properties: { child: { $ref: '#' } } }), []);
    // One that only an object with `a` leads back into itself is saved; the check of such arguments says why it
    // cannot be made, for the model to read, instead of throwing in the worker.
    const someValues = { type: 'object', dependentSchemas: { a: { $ref: '#' } } };
    assert.deepEqual(problems(someValues), []);
    assert.equal(argumentsValidator(someValues)({ b: 1 }), null);
    assert.match(
      argumentsValidator(someValues)({ a: 1 }) ?? '',
      /^arguments could not be checked: the check went deeper than the call stack allows/,
    );
  });

  it('compiles a schema once, however many calls check arguments against it', () => {
    const schemas = new CompiledSchemas({ max: 10, maxBytes: 1 << 20 });
    const schema = () => ({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
    const first = schemas.of(schema());
    for (let i = 0; i < 5; i++) assert.equal(schemas.of(schema()), first, 'the same compiled check, from an equal schema');
    assert.equal(schemas.size, 1);
  });

  it("keeps one schema's nested $id from refusing another schema whose root has that $id", () => {
    const first = { type: 'object', properties: { q: { $id: 'urn:shared:q', type: 'string' } } };
    const second = { $id: 'urn:shared:q', type: 'object', properties: { r: { type: 'number' } } };
    assert.deepEqual(problems(first), []);
    assert.deepEqual(problems(second), []);
    assert.equal(argumentsValidator(second)({ r: 'one' }), 'arguments/r must be number');
  });

  it('holds no more compiled schemas than its bound, however many distinct schemas with $ids it sees', () => {
    const schemas = new CompiledSchemas({ max: 8, maxBytes: 1 << 20 });
    for (let i = 0; i < 40; i++) {
      const properties = Object.fromEntries(Array.from({ length: 50 }, (_, j) => [`p${j}`, { $id: `urn:leak:${i}:${j}`, type: 'string' }]));
      assert.ok('check' in schemas.of({ type: 'object', properties }));
      assert.ok(schemas.size <= 8, `${schemas.size} compiled schemas held`);
    }
    // The bytes bound holds as well: two schemas of 40 KB do not fit in 64 KB together.
    const bounded = new CompiledSchemas({ max: 100, maxBytes: 65_536 });
    for (const c of ['a', 'b', 'c']) bounded.of({ type: 'object', description: c.repeat(40_000) });
    assert.equal(bounded.size, 1);
  });
});
