/** The grouping of an analytics report, kept in the URL as `group`, and the field that changes it. */
import { useEffect, useState } from 'preact/hooks';

export const DIMENSIONS = [
  ['agent_id', 'Agent'],
  ['network_id', 'Network'],
  ['model', 'Model'],
  ['api_key_id', 'API key'],
] as const;
export type Dimension = (typeof DIMENSIONS)[number][0] | `metadata.${string}`;
const TAG_KEY = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The grouping a URL names; `none` (no grouping) only where a report offers it, that is when the fallback is none. */
export function dimensionOf(value: string | null, fallback: Dimension | null): Dimension | null {
  if (value === 'none' && fallback === null) return null;
  if (value && DIMENSIONS.some(([d]) => d === value)) return value as Dimension;
  if (value?.startsWith('metadata.') && TAG_KEY.test(value.slice(9))) return value as Dimension;
  return fallback;
}

export const dimensionName = (dimension: Dimension | null) =>
  dimension === null
    ? 'nothing'
    : dimension.startsWith('metadata.')
      ? `tag ${dimension.slice(9)}`
      : DIMENSIONS.find(([d]) => d === dimension)![1].toLowerCase();

/** The value a result has for the grouped dimension (null: the call or run had none). */
export function groupValue(
  result: { metadata?: Record<string, string | null> } & Partial<Record<string, unknown>>,
  dimension: Dimension | null,
): string | null {
  if (dimension === null) return 'all';
  if (dimension.startsWith('metadata.')) return result.metadata?.[dimension.slice(9)] ?? null;
  const value = result[dimension];
  return typeof value === 'string' ? value : null;
}

/** "Group by": a dimension, or a metadata tag whose key is typed in; `allowNone` offers no grouping. */
export function GroupPicker({
  dimension,
  change,
  allowNone = false,
}: {
  dimension: Dimension | null;
  change: (group: string) => void;
  allowNone?: boolean;
}) {
  const tag = dimension?.startsWith('metadata.') ? dimension.slice(9) : null;
  const [choice, setChoice] = useState<string>(tag !== null ? 'metadata' : (dimension ?? 'none'));
  const [key, setKey] = useState(tag ?? '');
  useEffect(() => {
    setChoice(tag !== null ? 'metadata' : (dimension ?? 'none'));
    if (tag !== null) setKey(tag);
  }, [dimension]);
  const valid = TAG_KEY.test(key);
  return (
    <form
      class="row analytics-group"
      onSubmit={(e) => {
        e.preventDefault();
        if (valid) change(`metadata.${key}`);
      }}
    >
      <div class="field">
        <label for="group-by">Group by</label>
        <select
          id="group-by"
          value={choice}
          onChange={(e) => {
            const value = e.currentTarget.value;
            setChoice(value);
            if (value !== 'metadata') change(value);
            else if (valid) change(`metadata.${key}`);
          }}
        >
          {allowNone && <option value="none">Nothing</option>}
          {DIMENSIONS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
          <option value="metadata">Metadata tag</option>
        </select>
      </div>
      {choice === 'metadata' && (
        <>
          <div class="field">
            <label for="group-tag">Tag key</label>
            <input id="group-tag" value={key} required pattern="[A-Za-z0-9_.:\-]{1,64}" onInput={(e) => setKey(e.currentTarget.value)} />
          </div>
          <button type="submit" class="plain" disabled={!valid}>
            Group by tag
          </button>
        </>
      )}
    </form>
  );
}
