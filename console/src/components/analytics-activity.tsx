/**
 * Runs that ended in the last hour, per minute, from the event log (`run.completed`, `run.failed`,
 * `run.cancelled`): counts, and bars with failures stacked on top (hatched, and counted in words).
 */
import { useEffect, useRef } from 'preact/hooks';
import { api, unwrap, type Schemas } from '../api';
import { useApi } from '../use-api';
import { Async, EmptyState } from './states';
import { IdLink } from './links';
import { formatCount } from '../format';

const WINDOW = 3600;
const MINUTES = 60;
/** Enough for 10 runs a second; beyond it the counts say "at least". */
const MAX_PAGES = 36;
const TYPES: Schemas['EventType'][] = ['run.completed', 'run.failed', 'run.cancelled'];

interface Activity {
  since: number;
  /** Per minute, oldest first. */
  ended: number[];
  failed: number[];
  total: number;
  failures: Schemas['Event'][];
  capped: boolean;
}

async function activitySince(since: number, signal: AbortSignal): Promise<Activity> {
  const events: Schemas['Event'][] = [];
  let after: string | undefined;
  let pages = 0;
  let more = true;
  while (more && pages < MAX_PAGES) {
    const page = unwrap(
      await api.GET('/v1/events', {
        params: { query: { type: TYPES, created_after: since - 1, limit: 100, ...(after ? { after } : {}) } },
        signal,
      }),
    );
    events.push(...(page.data ?? []));
    more = page.has_more && page.last_id !== null;
    after = page.last_id ?? undefined;
    pages += 1;
  }
  const ended = Array.from({ length: MINUTES }, () => 0);
  const failed = Array.from({ length: MINUTES }, () => 0);
  for (const event of events) {
    const minute = Math.min(MINUTES - 1, Math.max(0, Math.floor((event.created_at - since) / 60)));
    ended[minute]! += 1;
    if (event.type !== 'run.completed') failed[minute]! += 1;
  }
  return {
    since,
    ended,
    failed,
    total: events.length,
    failures: events.filter((e) => e.type !== 'run.completed').slice(0, 5),
    capped: more,
  };
}

export function RecentActivity() {
  const loaded = useApi((signal) => activitySince(Math.floor(Date.now() / 1000) - WINDOW, signal), []);
  useEffect(() => {
    const timer = setInterval(loaded.reload, 30_000);
    return () => clearInterval(timer);
  }, []);
  return (
    <section aria-labelledby="activity-title">
      <h2 id="activity-title">Runs in the last hour</h2>
      <Async loaded={loaded} what="runs of the last hour">
        {(activity) => {
          const failures = activity.failed.reduce((a, b) => a + b, 0);
          const atLeast = activity.capped ? 'at least ' : '';
          if (activity.total === 0)
            return (
              <EmptyState title="No run ended in the last hour" method="POST" path="/v1/agents/{agent_id}/run" body={{ input: 'Hello' }}>
                <p>Runs appear here as they end.</p>
              </EmptyState>
            );
          return (
            <>
              <div class="cards" aria-live="polite">
                <div class="card">
                  <div class="muted">Runs ended</div>
                  <div class="value">{atLeast + formatCount(activity.total)}</div>
                  <div class="muted">{(activity.total / MINUTES).toFixed(1)} a minute</div>
                </div>
                <div class="card">
                  <div class="muted">Failed or cancelled</div>
                  <div class={`value${failures ? ' error' : ''}`}>{formatCount(failures)}</div>
                  <div class="muted">{activity.total ? `${Math.round((failures / activity.total) * 100)}% of runs` : '—'}</div>
                </div>
              </div>
              <MinuteBars
                activity={activity}
                summary={`Runs ended per minute over the last hour: ${atLeast}${activity.total} in all, ${failures} of them failed or cancelled; most in one minute: ${Math.max(...activity.ended)}.`}
              />
              {activity.failures.length > 0 && (
                <p>
                  Latest failures:{' '}
                  {activity.failures.map((event, i) => (
                    <span key={event.id}>
                      {i > 0 && ', '}
                      <IdLink id={event.data.id} /> ({event.type.replace('run.', '')})
                    </span>
                  ))}
                </p>
              )}
            </>
          );
        }}
      </Async>
    </section>
  );
}

/** Sixty columns, heights set through the DOM (the CSP allows no inline styles). */
function MinuteBars({ activity, summary }: { activity: Activity; summary: string }) {
  const chart = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const top = Math.max(1, ...activity.ended);
    chart.current!.querySelectorAll<HTMLElement>('.minute').forEach((column, i) => {
      const ok = column.querySelector<HTMLElement>('.minute-ok')!;
      const bad = column.querySelector<HTMLElement>('.minute-failed')!;
      ok.style.height = `${((activity.ended[i]! - activity.failed[i]!) / top) * 100}%`;
      bad.style.height = `${(activity.failed[i]! / top) * 100}%`;
    });
  }, [activity]);
  return (
    <div ref={chart} class="minute-bars" role="img" aria-label={summary}>
      {activity.ended.map((n, i) => (
        <div
          key={i}
          class="minute"
          title={`${new Date((activity.since + i * 60) * 1000).toLocaleTimeString()}: ${n} ended, ${activity.failed[i]} failed`}
        >
          <span class="minute-failed" />
          <span class="minute-ok" />
        </div>
      ))}
    </div>
  );
}
