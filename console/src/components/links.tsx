/** Links to the console's own views: every object id renders as one. */
import { Link } from 'wouter-preact';

const VIEW_OF: Record<string, string> = {
  run: 'runs',
  agent: 'agents',
  net: 'networks',
  file: 'files',
  node: 'graph/nodes',
  whk: 'webhooks',
  thread: 'threads',
  ds: 'datasets',
  exp: 'experiments',
};

/** A link to the object an id names (by its prefix), or the id as text when the console has no view of it. */
export function IdLink({ id }: { id: string | null | undefined }) {
  if (!id) return <span class="muted">—</span>;
  const prefix = id.split('_')[0] ?? '';
  const view = VIEW_OF[prefix];
  return view ? (
    <Link href={`/${view}/${encodeURIComponent(id)}`} class="id">
      {id}
    </Link>
  ) : (
    <code class="id">{id}</code>
  );
}
