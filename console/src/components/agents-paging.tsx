/**
 * Paging of a list by the API's keyset cursors, kept in the URL (`?after=…` or `?before=…`, under a prefix
 * when a view pages two lists) so that every page is a deep link.
 */
import { Link, useLocation, useSearchParams } from 'wouter-preact';

export interface Cursor {
  after?: string;
  before?: string;
}

export function useCursor(prefix = ''): Cursor {
  const [search] = useSearchParams();
  const after = search.get(`${prefix}after`) ?? undefined;
  const before = after ? undefined : (search.get(`${prefix}before`) ?? undefined);
  return { after, before };
}

interface ListPage {
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** Newer and Older links: a page reached by `after` has newer ones before it, one reached by `before` older ones after it. */
export function Pager({ page, cursor, prefix = '', label }: { page: ListPage; cursor: Cursor; prefix?: string; label: string }) {
  const [location] = useLocation();
  const [search] = useSearchParams();
  const href = (name: 'after' | 'before', id: string) => {
    const next = new URLSearchParams(search);
    next.delete(`${prefix}after`);
    next.delete(`${prefix}before`);
    next.set(`${prefix}${name}`, id);
    return `${location}?${next.toString()}`;
  };
  const newer = cursor.after !== undefined || (cursor.before !== undefined && page.has_more);
  const older = cursor.before !== undefined || (cursor.before === undefined && page.has_more);
  if (!newer && !older) return null;
  return (
    <nav class="pager" aria-label={label}>
      {newer && page.first_id ? <Link href={href('before', page.first_id)}>← Newer</Link> : <span class="muted">← Newer</span>}
      {older && page.last_id ? <Link href={href('after', page.last_id)}>Older →</Link> : <span class="muted">Older →</span>}
    </nav>
  );
}
