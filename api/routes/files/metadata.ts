/** `metadata` as one JSON-object field or as `metadata[key]` fields: at most 16 string pairs. */
import { InvalidRequestError } from '../../errors.js';
import { unstorable } from '../../validation.js';

export const MAX_METADATA_PAIRS = 16;
export const MAX_METADATA_KEY_LENGTH = 64;
export const MAX_METADATA_VALUE_LENGTH = 512;

export function parseMetadata(fields: [string, string][]): Record<string, string> {
  const pairs: [unknown, unknown][] = [];
  let asObject = false;
  let asBrackets = false;
  for (const [name, value] of fields) {
    if (name === 'metadata') {
      if (asObject) throw InvalidRequestError('invalid_metadata', 'Give `metadata` once.', 'metadata');
      asObject = true;
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        throw InvalidRequestError('invalid_metadata', '`metadata` must be a JSON object of string pairs.', 'metadata');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw InvalidRequestError('invalid_metadata', '`metadata` must be a JSON object of string pairs.', 'metadata');
      }
      pairs.push(...Object.entries(parsed));
    } else {
      const key = /^metadata\[(.*)\]$/s.exec(name)?.[1];
      if (key === undefined) throw InvalidRequestError('unknown_parameter', `Unknown parameter \`${name}\`.`, name);
      asBrackets = true;
      pairs.push([key, value]);
    }
  }
  if (asObject && asBrackets) {
    throw InvalidRequestError('invalid_metadata', 'Give `metadata` as one JSON field or as `metadata[key]` fields, not both.', 'metadata');
  }
  if (pairs.length > MAX_METADATA_PAIRS) {
    throw InvalidRequestError(
      'metadata_too_many_pairs',
      `\`metadata\` has ${pairs.length} pairs; at most ${MAX_METADATA_PAIRS} are allowed.`,
      'metadata',
    );
  }
  const metadata: Record<string, string> = Object.create(null);
  for (const [key, value] of pairs) {
    if (typeof key !== 'string' || key.length === 0 || characters(key) > MAX_METADATA_KEY_LENGTH || unstorable(key)) {
      throw InvalidRequestError(
        'metadata_invalid_key',
        `Metadata keys are strings of 1 to ${MAX_METADATA_KEY_LENGTH} characters, without the NUL character or half of a surrogate pair.`,
        `metadata`,
      );
    }
    if (typeof value !== 'string' || unstorable(value)) {
      throw InvalidRequestError(
        'metadata_invalid_value',
        `The value of metadata key '${key}' must be a string without the NUL character or half of a surrogate pair.`,
        `metadata[${key}]`,
      );
    }
    if (characters(value) > MAX_METADATA_VALUE_LENGTH) {
      throw InvalidRequestError(
        'metadata_value_too_long',
        `The value of metadata key '${key}' is longer than ${MAX_METADATA_VALUE_LENGTH} characters.`,
        `metadata[${key}]`,
      );
    }
    if (key in metadata) throw InvalidRequestError('invalid_metadata', `Metadata key '${key}' is given twice.`, `metadata[${key}]`);
    metadata[key] = value;
  }
  return { ...metadata };
}

// Counted in code points, as the OpenAPI document's maxLength counts them, not in UTF-16 units.
const characters = (text: string) => [...text].length;
