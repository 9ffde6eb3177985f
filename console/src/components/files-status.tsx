/** A file's extraction status as a badge, and the polling that keeps it live while extraction runs. */
import { useEffect } from 'preact/hooks';
import type { Schemas } from '../api';

const LABEL: Record<Schemas['FileStatus'], string> = {
  processing: 'processing',
  processed: 'processed',
  failed: 'failed',
};

/** The word says the status; the colour only repeats it. */
export function FileStatusBadge({ status }: { status: Schemas['FileStatus'] }) {
  return <span class={`status status-${status}`}>{LABEL[status]}</span>;
}

/**
 * Loads again `intervalMs` after each load has finished, for as long as `active` holds and the view is mounted:
 * a slow answer is never cut off by the next poll. Extraction always settles (a file never stays
 * `processing`), so the polling ends by itself; it has no deadline of its own.
 */
export function usePollWhile(active: boolean, loaded: { loading: boolean; reload: () => void }, intervalMs = 1000): void {
  const { loading, reload } = loaded;
  useEffect(() => {
    if (!active || loading) return;
    const timer = window.setTimeout(reload, intervalMs);
    return () => window.clearTimeout(timer);
  }, [active, loading, reload, intervalMs]);
}
