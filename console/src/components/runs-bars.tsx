/**
 * The run view's small drawings. Their sizes are computed, and the Content-Security-Policy forbids style
 * attributes, so each sets its element's style through the DOM.
 */
import { useLayoutEffect, useRef } from 'preact/hooks';

const percent = (fraction: number) => `${(Math.min(1, Math.max(0, fraction)) * 100).toFixed(2)}%`;

/** A status as a word in a badge: its colour is never the only sign. */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status.replace('_', ' ')}</span>;
}

/** A bar as wide as `share` (0–1) of its cell, with the share written beside it. */
export function ShareBar({ share }: { share: number }) {
  const fill = useRef<HTMLSpanElement>(null);
  useLayoutEffect(() => {
    if (fill.current) fill.current.style.width = percent(share);
  }, [share]);
  const level = share >= 0.5 ? 'high' : share >= 0.1 ? 'mid' : 'low';
  return (
    <span class="share">
      <span class={`share-track share-${level}`} aria-hidden="true">
        <span ref={fill} class="share-fill" />
      </span>
      <span class="share-text">{(share * 100).toFixed(share > 0 && share < 0.01 ? 2 : 1)}%</span>
    </span>
  );
}

/** A step's span within its run: `start` and `end` as fractions of the run's duration. */
export function TimelineBar({ start, end, active, label }: { start: number; end: number; active: boolean; label: string }) {
  const bar = useRef<HTMLSpanElement>(null);
  useLayoutEffect(() => {
    if (!bar.current) return;
    bar.current.style.left = percent(start);
    bar.current.style.width = percent(Math.max(end - start, 0.004));
  }, [start, end]);
  return (
    <span class="timeline" title={label}>
      <span ref={bar} class={active ? 'timeline-bar timeline-active' : 'timeline-bar'} />
      <span class="visually-hidden">{label}</span>
    </span>
  );
}
