/** The project's audit log: who changed what, with what outcome, filterable by action and target, in the URL. */
import { useSearchParams } from 'wouter-preact';
import { api, unwrap, type Schemas } from '../api';
import { AUDIT_ACTIONS } from '../components/admin-enums';
import { Pager, useCursor } from '../components/admin-pager';
import { IdLink } from '../components/links';
import { Async, EmptyState } from '../components/states';
import { formatTime } from '../format';
import { useApi } from '../use-api';
import './admin.css';

type Entry = Schemas['AuditLogEntry'];

export default function AuditLogView() {
  const [search, setSearch] = useSearchParams();
  const action = search.get('action') || undefined;
  const target = search.get('target_id') || undefined;
  const cursor = useCursor();
  const entries = useApi(
    (signal) => api.GET('/v1/audit-logs', { params: { query: { limit: 50, action, target_id: target, ...cursor } }, signal }).then(unwrap),
    [action, target, cursor.after, cursor.before],
  );
  // Names for the actor column; a key that cannot be listed (another project's bootstrap key) shows its id.
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
    for (const name of ['action', 'target_id']) {
      const value = String(data.get(name) ?? '').trim();
      if (value) next.set(name, value);
    }
    setSearch(next);
  }

  const filtered = Boolean(action || target);
  return (
    <>
      <h1>Audit log</h1>
      <p class="muted">Every change made with a key of this project, whatever its outcome, newest first.</p>
      <form class="row filters" role="search" aria-label="Filter the audit log" onSubmit={filter} key={`${action}|${target}`}>
        <div class="field">
          <label for="audit-action">Action</label>
          <input id="audit-action" name="action" list="audit-actions" defaultValue={action ?? ''} maxLength={64} placeholder="api_key.create" />
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
      <Async loaded={entries} what="the audit log">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            filtered ? (
              <EmptyState title="No entries match" path={`/v1/audit-logs?${new URLSearchParams(Object.entries({ action, target_id: target }).filter((pair): pair is [string, string] => Boolean(pair[1])))}`}>
                <p>Nothing in the log matches these filters. The same question to the API:</p>
              </EmptyState>
            ) : (
              <EmptyState title="Nothing audited yet" path="/v1/audit-logs">
                <p>Each request that changes something (creating a key, uploading a file, starting a run) writes an entry. Read them with:</p>
              </EmptyState>
            )
          ) : (
            <>
              <table>
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
            <code class="id">{actor}</code>
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
