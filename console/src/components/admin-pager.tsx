/** Paging through an API list by its cursors, kept in the URL (`after` / `before`) so a page is a deep link. */
import { useSearchParams } from 'wouter-preact';

export interface Page {
  first_id?: string | null;
  last_id?: string | null;
  has_more: boolean;
}

/** The cursor in the URL, as the list operation's query takes it. */
export function useCursor(): { after?: string; before?: string } {
  const [search] = useSearchParams();
  const after = search.get('after') || undefined;
  const before = search.get('before') || undefined;
  return before ? { before } : { after };
}

export function Pager({ page, what }: { page: Page; what: string }) {
  const [search, setSearch] = useSearchParams();
  const paging = search.has('after') || search.has('before');
  // Going back (`before`) the API answers the page nearest the cursor; has_more then says whether there are newer ones.
  const back = search.has('before') ? page.has_more : paging;
  const forward = search.has('before') ? true : page.has_more;
  if (!back && !forward) return null;
  const go = (cursor: 'after' | 'before', id: string | null | undefined) => {
    if (!id) return;
    setSearch((previous) => {
      const next = new URLSearchParams(previous);
      next.delete('after');
      next.delete('before');
      next.set(cursor, id);
      return next;
    });
  };
  return (
    <nav class="pager" aria-label={`Pages of ${what}`}>
      <button type="button" class="plain" disabled={!back} onClick={() => go('before', page.first_id)}>
        Newer
      </button>
      <button type="button" class="plain" disabled={!forward} onClick={() => go('after', page.last_id)}>
        Older
      </button>
    </nav>
  );
}
