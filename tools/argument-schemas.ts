/**
 * Checking a tool call's arguments against the tool's JSON Schema, which a tenant wrote. The schema runs
 * inside a worker shared by every tenant, so it is bounded in size and depth, its patterns are matched in
 * linear time (RE2), and each schema is compiled once on an Ajv instance of its own: nothing one schema
 * registers (a nested `$id`) is seen by another, and a compiled schema is dropped with its validator.
 */
import { createHash } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { CodeOptions } from 'ajv/dist/2020.js';
import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';

/** The most a `parameters` schema may take, as JSON text. */
export const MAX_PARAMETERS_BYTES = 65_536;
/** The deepest a `parameters` schema may nest objects and arrays (the schema itself is level 1). */
export const MAX_PARAMETERS_DEPTH = 32;
/** The most objects and arrays a `parameters` schema may hold, itself included: compiling takes time in proportion. */
export const MAX_PARAMETERS_NODES = 512;
/** The most patterns a `parameters` schema may use (each is compiled to an automaton of its own). */
export const MAX_PARAMETERS_PATTERNS = 64;

/** A check of arguments: null when they match, else what is wrong, for the model to read. */
export type ArgumentsCheck = (value: unknown) => string | null;

/** The check for a schema's arguments, or why the schema cannot be used. */
export type Compiled = { check: ArgumentsCheck } | { problem: string };

const JSON_SCHEMA_2020 = 'https://json-schema.org/draft/2020-12/schema';

/**
 * Patterns compiled by RE2, whose matching time grows linearly with the text, at most `max` of them. A
 * pattern RE2 cannot take (a backreference, a lookahead or lookbehind) fails the schema's compile, naming
 * the pattern.
 */
function linearPatterns(max: number): NonNullable<CodeOptions['regExp']> {
  let compiled = 0;
  const engine = (pattern: string) => {
    if (++compiled > max) throw new Error(`it uses more than ${max} patterns, the most allowed`);
    let re: RE2JS;
    try {
      re = RE2JS.compile(RE2JS.translateRegExp(pattern));
    } catch (err) {
      throw new Error(
        `the pattern ${JSON.stringify(pattern)} is not supported (patterns are matched in linear time, without backreferences or lookaround): ${(err as Error).message}`,
        { cause: err },
      );
    }
    // Ajv shares one compiled pattern among the uses whose text is the same: the key must be the pattern.
    return { test: (text: string) => re.test(text), toString: () => `/${pattern}/` };
  };
  return Object.assign(engine, { code: 're2js' });
}

// Unknown keywords and formats are allowed: tool schemas are written for models, not for Ajv. The generated
// code is not optimised: that pass costs more than it saves on arguments of a few kilobytes.
const AJV_OPTIONS = { strict: false, allErrors: true, logger: false, validateFormats: false, code: { optimize: false } } as const;

// Checks schemas against the 2020-12 meta-schema. It only ever validates schemas as data, so nothing a
// tenant writes is registered on it.
const metaSchemaAjv = new Ajv2020({ ...AJV_OPTIONS, allErrors: false, code: { ...AJV_OPTIONS.code, regExp: linearPatterns(Infinity) } });

/**
 * Compiled schemas by the hash of their JSON text, so that a schema is compiled on its first use in a
 * process rather than on every call. Bounded by count and by the schemas' total size, since what they
 * compile to grows with it; an evicted schema takes its Ajv instance, and the `$id`s on it, with it.
 */
export class CompiledSchemas {
  private readonly entries: LRUCache<string, { outcome: Compiled; bytes: number }>;

  constructor({ max, maxBytes }: { max: number; maxBytes: number }) {
    this.entries = new LRUCache({ max, maxSize: maxBytes, sizeCalculation: (entry) => entry.bytes });
  }

  /** How many compiled schemas are held. */
  get size(): number {
    return this.entries.size;
  }

  /** The check for `schema`'s arguments, or why the schema cannot be used. */
  of(schema: Record<string, unknown>): Compiled {
    const shape = shapeProblem(schema);
    if (shape) return { problem: shape };
    const text = JSON.stringify(schema);
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_PARAMETERS_BYTES) return { problem: `is ${bytes} bytes as JSON, more than the ${MAX_PARAMETERS_BYTES} allowed` };
    const key = createHash('sha256').update(text).digest('base64url');
    const known = this.entries.get(key);
    if (known) return known.outcome;
    const outcome = compile(schema);
    this.entries.set(key, { outcome, bytes: Math.max(bytes, 1) });
    return outcome;
  }
}

const compiledSchemas = new CompiledSchemas({ max: 2_000, maxBytes: 32 * 1024 * 1024 });

/** Why `schema` cannot be used as a tool's parameters (too large or deep, not a usable JSON Schema), or null. */
export function parametersProblem(schema: Record<string, unknown>): string | null {
  const outcome = compiledSchemas.of(schema);
  return 'problem' in outcome ? outcome.problem : null;
}

/** The check for `schema`'s arguments; throws when the schema cannot be used (see parametersProblem). */
export function argumentsValidator(schema: Record<string, unknown>): ArgumentsCheck {
  const outcome = compiledSchemas.of(schema);
  if ('problem' in outcome) throw new Error(outcome.problem);
  return outcome.check;
}

/** The check for `schema`'s arguments, compiled once per process, or why the schema cannot be used. */
export function compiledSchema(schema: Record<string, unknown>): Compiled {
  return compiledSchemas.of(schema);
}

/**
 * What a schema is when checking a value against it recurses without end: a `$ref` or `$dynamicRef` that comes
 * back to where it is (through `allOf`, `not`, `if`…) before it reaches into the value's properties or items.
 * The recursion ends on the call stack's limit, a few milliseconds in.
 */
const ENDLESS =
  'refers to itself without end: a `$ref` or `$dynamicRef` leads back to itself before reaching into the properties or items of the value';

/**
 * What a check says when checking recursed past the call stack's limit, from the schema or from the value: the
 * arguments neither match nor fail to, and who guards a call with the schema treats them as matching.
 */
export const UNCHECKABLE =
  'arguments could not be checked: the check went deeper than the call stack allows (the schema refers to itself without end, or the value nests too deep)';

/** A value of each JSON type, checked once against each schema compiled. */
const PROBES: readonly unknown[] = [null, true, 0, '', [], {}];

function compile(schema: Record<string, unknown>): Compiled {
  const declared = schema.$schema;
  if (declared !== undefined && declared !== JSON_SCHEMA_2020 && declared !== `${JSON_SCHEMA_2020}#`) {
    return { problem: `is not a usable JSON Schema: only JSON Schema 2020-12 (${JSON_SCHEMA_2020}) is supported` };
  }
  const { $schema: _declared, ...rest } = schema;
  const validateMeta = metaSchemaAjv.getSchema(JSON_SCHEMA_2020);
  if (validateMeta && !validateMeta(rest)) {
    return { problem: `is not a usable JSON Schema: ${metaSchemaAjv.errorsText(validateMeta.errors, { dataVar: 'schema' })}` };
  }
  try {
    // An instance per schema: what the schema registers (its `$id`s) lives and goes with its validator.
    const ajv = new Ajv2020({
      ...AJV_OPTIONS,
      validateSchema: false,
      code: { ...AJV_OPTIONS.code, regExp: linearPatterns(MAX_PARAMETERS_PATTERNS) },
    });
    const validate = ajv.compile(rest);
    const check: ArgumentsCheck = (value) => {
      try {
        return validate(value) ? null : ajv.errorsText(validate.errors, { dataVar: 'arguments' });
      } catch (err) {
        if (err instanceof RangeError) return UNCHECKABLE;
        throw err;
      }
    };
    // A schema that refers to itself without end is refused when saved if a value of any type shows it; one
    // that only some values lead into (an `if` on a property's value) fails the check of those values.
    if (PROBES.some((probe) => check(probe) === UNCHECKABLE)) return { problem: ENDLESS };
    return { check };
  } catch (err) {
    if (err instanceof RangeError) return { problem: ENDLESS };
    return { problem: `is not a usable JSON Schema: ${(err as Error).message}` };
  }
}

/**
 * Why `schema` nests objects and arrays too deep or holds too many of them, or null. Looks no further than
 * the limits, so a schema far past them costs no more than one at them.
 */
export function shapeProblem(schema: unknown): string | null {
  let nodes = 0;
  const pending: { value: unknown; depth: number }[] = [{ value: schema, depth: 1 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, depth } = next;
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_PARAMETERS_DEPTH) return `nests objects and arrays deeper than ${MAX_PARAMETERS_DEPTH} levels, the most allowed`;
    if (++nodes > MAX_PARAMETERS_NODES) return `holds more than ${MAX_PARAMETERS_NODES} objects and arrays, the most allowed`;
    for (const child of Array.isArray(value) ? value : Object.values(value)) pending.push({ value: child, depth: depth + 1 });
  }
  return null;
}
