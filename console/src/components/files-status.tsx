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
 * Calls `reload` every `intervalMs` for as long as `active` holds and the view is mounted. Extraction always
 * settles (a file never stays `processing`), so the polling ends by itself; it has no deadline of its own.
 */
export function usePollWhile(active: boolean, reload: () => void, intervalMs = 1000): void {
  useEffect(() => {
    if (!active) return;
    const timer = window.setInterval(reload, intervalMs);
    return () => window.clearInterval(timer);
  }, [active, reload, intervalMs]);
}
