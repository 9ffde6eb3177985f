/**
 * Overview: runs that ended in the last hour and how many failed, today's spend against the budgets, files
 * still processing, and the latest events with links to what they are about.
 */
import { Link } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { Async, EmptyState } from '../components/states';
import { IdLink } from '../components/links';
import { formatCount, formatTime, formatUsd } from '../format';
import { useApi } from '../use-api';
import { RecentActivity } from '../components/analytics-activity';
import { sumDecimals } from '../components/analytics-decimal';
import { todayStart } from '../components/analytics-range';
import './analytics.css';

const DAY = 86_400;
const isoToday = () => new Date(todayStart() * 1000).toISOString().slice(0, 10);
/** Files counted by status: the newest this many. */
const FILES_COUNTED = 500;

export default function OverviewView() {
  return (
    <>
      <h1>Overview</h1>
      <RecentActivity />
      <Spend />
      <Files />
      <RecentEvents />
    </>
  );
}

function Spend() {
  const today = useApi(async (signal) => {
    const start = todayStart();
    const report = unwrap(
      await api.GET('/v1/analytics/costs', { params: { query: { start_time: start, end_time: start + DAY, bucket_width: '1d' } }, signal }),
    );
    return sumDecimals(report.data.flatMap((bucket) => bucket.results.map((r) => r.amount.value)));
  }, []);
  const budgets = useApi(
    async (signal) => unwrap(await api.GET('/v1/budgets', { params: { query: { limit: 100 } }, signal })).data ?? [],
    [],
  );
  return (
    <section aria-labelledby="spend-title">
      <h2 id="spend-title">Spend</h2>
      <Async loaded={today} what="today's spend">
        {(spent) => (
          <div class="cards">
            <div class="card">
              <div class="muted">Spent today (UTC)</div>
              <div class="value">{formatUsd(spent)}</div>
              <Link href={`/costs?from=${isoToday()}&to=${isoToday()}`}>Today's costs by agent</Link>
            </div>
          </div>
        )}
      </Async>
      <Async loaded={budgets} what="budgets">
        {(list) =>
          list.length === 0 ? (
            <EmptyState
              title="No budgets"
              method="POST"
              path="/v1/budgets"
              body={{ scope: { type: 'project' }, period: 'day', limit_usd: '25.00', name: 'daily' }}
            >
              <p>A budget limits what the project, an API key or an agent may spend in a day or a month.</p>
            </EmptyState>
          ) : (
            <BudgetTable budgets={list} />
          )
        }
      </Async>
    </section>
  );
}

function BudgetTable({ budgets }: { budgets: Schemas['Budget'][] }) {
  return (
    <table class="overview-budgets">
      <caption>Budgets: spent in the current period against the limit</caption>
      <thead>
        <tr>
          <th scope="col">Budget</th>
          <th scope="col">Applies to</th>
          <th scope="col">Period</th>
          <th scope="col" class="number">
            Spent (USD)
          </th>
          <th scope="col" class="number">
            Limit (USD)
          </th>
          <th scope="col">Used</th>
        </tr>
      </thead>
      <tbody>
        {budgets.map((budget) => {
          const share = Number(budget.spent_usd) / Number(budget.limit_usd);
          const label = budget.name ?? budget.id;
          return (
            <tr key={budget.id}>
              <th scope="row">{label}</th>
              <td>
                {budget.scope.type === 'project' ? 'the project' : budget.scope.type === 'agent' ? 'agent ' : 'API key '}
                {budget.scope.type !== 'project' && <IdLink id={budget.scope.id} />}
              </td>
              <td>
                {budget.period === 'day' ? 'today' : 'this month'} (until {formatTime(budget.period_end)})
              </td>
              <td class="number">{budget.spent_usd}</td>
              <td class="number">{budget.limit_usd}</td>
              <td>
                <meter
                  min={0}
                  max={1}
                  low={0.5}
                  high={0.8}
                  optimum={0}
                  value={Math.min(1, share)}
                  aria-label={`${label}: share of the limit used`}
                />{' '}
                <span class={share >= 1 ? 'error' : share >= 0.8 ? 'warn' : undefined}>
                  {(share * 100).toFixed(share < 0.1 ? 1 : 0)}%{share >= 1 ? ' — runs are refused' : ''}
                </span>
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function Files() {
  const loaded = useApi(async (signal) => {
    const files: Schemas['File'][] = [];
    let after: string | undefined;
    for (;;) {
      const page = unwrap(await api.GET('/v1/files', { params: { query: { limit: 100, ...(after ? { after } : {}) } }, signal }));
      files.push(...(page.data ?? []));
      if (!page.has_more || !page.last_id || files.length >= FILES_COUNTED) return { files, more: page.has_more };
      after = page.last_id;
    }
  }, []);
  return (
    <section aria-labelledby="files-title">
      <h2 id="files-title">Files</h2>
      <Async loaded={loaded} what="files">
        {({ files, more }) => {
          if (files.length === 0)
            return <EmptyState title="No files" method="POST" path="/v1/files" form={['file=@report.pdf', 'purpose=context']} />;
          const processing = files.filter((f) => f.status === 'processing');
          const failed = files.filter((f) => f.status === 'failed');
          return (
            <>
              <div class="cards">
                <div class="card">
                  <div class="muted">Processing</div>
                  <div class="value">{formatCount(processing.length)}</div>
                </div>
                <div class="card">
                  <div class="muted">Failed</div>
                  <div class={`value${failed.length ? ' error' : ''}`}>{formatCount(failed.length)}</div>
                </div>
                <div class="card">
                  <div class="muted">Processed</div>
                  <div class="value">{formatCount(files.length - processing.length - failed.length)}</div>
                </div>
              </div>
              <p class="muted">
                {more ? `Of the newest ${files.length} files.` : `Of all ${files.length} files.`}{' '}
                {processing.slice(0, 5).map((f, i) => (
                  <span key={f.id}>
                    {i === 0 ? 'Processing: ' : ', '}
                    <IdLink id={f.id} />
                  </span>
                ))}
              </p>
            </>
          );
        }}
      </Async>
    </section>
  );
}

function RecentEvents() {
  const loaded = useApi(async (signal) => unwrap(await api.GET('/v1/events', { params: { query: { limit: 15 } }, signal })).data ?? [], []);
  return (
    <section aria-labelledby="events-title">
      <h2 id="events-title">Recent events</h2>
      <Async loaded={loaded} what="events">
        {(events) =>
          events.length === 0 ? (
            <EmptyState title="No events yet" path="/v1/events?limit=15">
              <p>Runs ending, files processed and budgets reaching a threshold are announced as events.</p>
            </EmptyState>
          ) : (
            <table class="overview-events">
              <caption>The latest events, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Event</th>
                  <th scope="col">About</th>
                </tr>
              </thead>
              <tbody>
                {events.map((event) => (
                  <tr key={event.id}>
                    <td>{formatTime(event.created_at)}</td>
                    <th scope="row">
                      <span class={`status status-${event.type.split('.').pop()}`}>{event.type}</span>
                    </th>
                    <td>
                      {event.data.object} <IdLink id={event.data.id} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Async>
    </section>
  );
}
