import type { Page } from '../records/pagination.js';

/** The one list envelope: a page of objects, the ids at its ends, and whether more follow. */
export function presentList<R, T extends { id: string }>(page: Page<R>, present: (record: R) => T) {
  const data = page.rows.map(present);
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
    has_more: page.hasMore,
  };
}
