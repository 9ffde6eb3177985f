/** Which records a list shows by who manages them, kept in the URL (`?managed_by=kubernetes|none`). */
import { useSearchParams } from 'wouter-preact';

export type ManagedBy = 'kubernetes' | 'none' | undefined;

export function useManagedBy(): ManagedBy {
  const [search] = useSearchParams();
  const value = search.get('managed_by');
  return value === 'kubernetes' || value === 'none' ? value : undefined;
}

export function ManagedByFilter({ id }: { id: string }) {
  const [search, setSearch] = useSearchParams();
  const change = (value: string) =>
    setSearch((previous) => {
      const next = new URLSearchParams(previous);
      // Another filter is another list: its cursors mean nothing here.
      next.delete('after');
      next.delete('before');
      if (value) next.set('managed_by', value);
      else next.delete('managed_by');
      return next;
    });
  return (
    <div class="row">
      <div class="field">
        <label for={id}>Managed by</label>
        <select id={id} value={search.get('managed_by') ?? ''} onChange={(event) => change(event.currentTarget.value)}>
          <option value="">Anyone</option>
          <option value="kubernetes">Kubernetes</option>
          <option value="none">Not Kubernetes (this API)</option>
        </select>
      </div>
    </div>
  );
}
