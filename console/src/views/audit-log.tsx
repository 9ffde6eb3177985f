/** The project's audit log: who changed what, with what outcome, filterable by action and target, in the URL. */
import { Link, useSearchParams } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { AUDIT_ACTIONS } from '../components/admin-enums';
import { Pager, useCursor } from '../components/admin-pager';
import { IdLink } from '../components/links';
import { Async, EmptyState } from '../components/states';
import { formatTime } from '../format';
import { useApi } from '../use-api';
import './admin.css';

type Entry = Schemas['AuditLogEntry'];

/** The API's filters, named as its query names them; the URL holds the same names. */
const FILTERS = ['action', 'target_id', 'actor_api_key_id', 'created_after', 'created_before'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

export default function AuditLogView() {
  const [search, setSearch] = useSearchParams();
  const filters: Filters = Object.fromEntries(FILTERS.flatMap((name) => (search.get(name) ? [[name, search.get(name)!]] : [])));
  const seconds = (text: string | undefined) => (text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined);
  const cursor = useCursor();
  const asked = search.toString();
  const entries = useApi(
    (signal) =>
      api
        .GET('/v1/audit-logs', {
          params: {
            query: {
              limit: 50,
              action: filters.action,
              target_id: filters.target_id,
              actor_api_key_id: filters.actor_api_key_id,
              created_after: seconds(filters.created_after),
              created_before: seconds(filters.created_before),
              ...cursor,
            },
          },
          signal,
        })
        .then(unwrap)
        .then((page) => ({ page, asked })),
    [asked],
  );
  // While another filter's page loads, the previous one is not shown as if it were its answer.
  const shown = { data: entries.data?.asked === asked ? entries.data.page : undefined, error: entries.error };
  // Names for the actor column and filter; a key that cannot be listed (another project's bootstrap key) shows its id.
  const keys = useApi(
    (signal) =>
      api
        .GET('/v1/api-keys', { params: { query: { limit: 100 } }, signal })
        .then(unwrap)
        .then((page) => new Map(page.data.map((key) => [key.id, key.name]))),
    [],
  );

  function filter(event: Event) {
    event.preventDefault();
    const data = new FormData(event.currentTarget as HTMLFormElement);
    const next = new URLSearchParams();
    for (const name of ['action', 'target_id', 'actor_api_key_id']) {
      const value = String(data.get(name) ?? '').trim();
      if (value) next.set(name, value);
    }
    // The form asks for whole minutes, both ends included; the API's bounds are exclusive seconds.
    const from = secondsOfLocal(String(data.get('from') ?? ''));
    const to = secondsOfLocal(String(data.get('to') ?? ''));
    if (from !== undefined) next.set('created_after', String(from - 1));
    if (to !== undefined) next.set('created_before', String(to + 60));
    setSearch(next);
  }

  const action = filters.action;
  const target = filters.target_id;
  const actor = filters.actor_api_key_id;
  const after = seconds(filters.created_after);
  const before = seconds(filters.created_before);
  const filtered = Object.keys(filters).length > 0;
  return (
    <>
      <h1>Audit log</h1>
      <p class="muted">Every change made with a key of this project, whatever its outcome, newest first.</p>
      <form
        class="row filters"
        role="search"
        aria-label="Filter the audit log"
        onSubmit={filter}
        key={FILTERS.map((name) => filters[name]).join('|')}
      >
        <div class="field">
          <label for="audit-action">Action</label>
          <input
            id="audit-action"
            name="action"
            list="audit-actions"
            defaultValue={action ?? ''}
            maxLength={64}
            placeholder="api_key.create"
          />
          <datalist id="audit-actions">
            {AUDIT_ACTIONS.map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
        </div>
        <div class="field">
          <label for="audit-target">Target id</label>
          <input id="audit-target" name="target_id" defaultValue={target ?? ''} maxLength={64} placeholder="agt_…" />
        </div>
        <div class="field">
          <label for="audit-actor">Actor key</label>
          <select id="audit-actor" name="actor_api_key_id">
            <option value="">Any key</option>
            {actor && !keys.data?.has(actor) && (
              <option value={actor} selected>
                {actor}
              </option>
            )}
            {[...(keys.data ?? new Map<string, string>())].map(([id, name]) => (
              <option key={id} value={id} selected={id === actor}>
                {name} ({id})
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="audit-from">From</label>
          <input id="audit-from" name="from" type="datetime-local" defaultValue={after === undefined ? '' : localOfSeconds(after + 1)} />
        </div>
        <div class="field">
          <label for="audit-to">To</label>
          <input id="audit-to" name="to" type="datetime-local" defaultValue={before === undefined ? '' : localOfSeconds(before - 60)} />
        </div>
        <div class="field">
          <button type="submit">Filter</button>
        </div>
        {filtered && (
          <div class="field">
            <button type="button" class="plain" onClick={() => setSearch(new URLSearchParams())}>
              Clear filters
            </button>
          </div>
        )}
      </form>
      <Async loaded={shown} what="the audit log">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            filtered ? (
              <EmptyState title="No entries match" path={`/v1/audit-logs?${new URLSearchParams(filters as Record<string, string>)}`}>
                <p>Nothing in the log matches these filters. The same question to the API:</p>
              </EmptyState>
            ) : (
              <EmptyState title="Nothing audited yet" path="/v1/audit-logs">
                <p>
                  Each request that changes something (creating a key, uploading a file, starting a run) writes an entry. Read them with:
                </p>
              </EmptyState>
            )
          ) : (
            <>
              <table class="listing audit">
                <caption>Entries</caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Actor key</th>
                    <th scope="col">Action</th>
                    <th scope="col">Target</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Request id</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((entry) => (
                    <Row key={entry.id} entry={entry} names={keys.data} />
                  ))}
                </tbody>
              </table>
              <Pager page={page} what="the audit log" />
            </>
          )
        }
      </Async>
    </>
  );
}

function Row({ entry, names }: { entry: Entry; names?: Map<string, string> }) {
  const actor = entry.actor.api_key_id;
  const ok = entry.outcome.status < 400;
  return (
    <tr>
      <th scope="row">{formatTime(entry.created_at)}</th>
      <td>
        {actor === null ? (
          <span class="muted">the platform</span>
        ) : (
          <>
            {names?.get(actor) && <div>{names.get(actor)}</div>}
            <Link href={`/audit-log?actor_api_key_id=${encodeURIComponent(actor)}`} class="id" title="Only this key's entries">
              {actor}
            </Link>
          </>
        )}
      </td>
      <td>
        <code>{entry.action}</code>
      </td>
      <td>
        <span class="muted">{entry.target.type}</span> <IdLink id={entry.target.id} />
      </td>
      <td>
        <span class={ok ? 'ok' : 'error'}>
          {ok ? '✓' : '✗'} {entry.outcome.status}
          {entry.outcome.error_code ? ` ${entry.outcome.error_code}` : ''}
        </span>
      </td>
      <td>
        <code class="id">{entry.request_id}</code>
      </td>
    </tr>
  );
}

/** A `datetime-local` value (the browser's time zone) as Unix seconds. */
function secondsOfLocal(value: string): number | undefined {
  if (!value) return undefined;
  const time = new Date(value).getTime();
  return Number.isNaN(time) ? undefined : Math.floor(time / 1000);
}

/** Unix seconds as a `datetime-local` value, to the minute, in the browser's time zone. */
function localOfSeconds(seconds: number): string {
  const date = new Date(seconds * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}T${two(date.getHours())}:${two(date.getMinutes())}`;
}
