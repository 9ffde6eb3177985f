/** The project's API keys: creating one (its secret is shown once), reading their scopes and limits, revoking. */
import { useState } from 'preact/hooks';
import { api, unwrap, type Schemas } from '../api';
import { ConfirmButton } from '../components/admin-confirm';
import { ApiKeyForm } from '../components/admin-api-key-form';
import { Pager, useCursor } from '../components/admin-pager';
import { SecretOnce } from '../components/admin-secret';
import { Async, EmptyState } from '../components/states';
import { formatCount, formatTime } from '../format';
import { session } from '../session';
import { useApi } from '../use-api';
import './admin.css';

type ApiKey = Schemas['ApiKey'];

export default function ApiKeysView() {
  const cursor = useCursor();
  const keys = useApi(
    (signal) => api.GET('/v1/api-keys', { params: { query: { limit: 20, ...cursor } }, signal }).then(unwrap),
    [cursor.after, cursor.before],
  );
  const [created, setCreated] = useState<Schemas['ApiKeyWithSecret']>();
  const [adding, setAdding] = useState(false);
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();
  const own = session.current()?.api_key_id;

  async function revoke(key: ApiKey) {
    setError(undefined);
    try {
      unwrap(await api.DELETE('/v1/api-keys/{id}', { params: { path: { id: key.id } } }));
    } catch (failure) {
      setError((failure as Error).message);
      return;
    }
    // Revoking the key this session was opened with ends the session on the server too.
    if (key.id === own) return session.ended('You revoked the key this session was signed in with. Sign in with another key.');
    setStatus(`Key ${key.name} is revoked: the API answers it 401 from now on.`);
    keys.reload();
  }

  return (
    <>
      <h1>API keys</h1>
      <p class="muted">Keys reach this project through the API with the scopes they hold. The API stores only a hash of each secret.</p>
      {created?.key && <SecretOnce label={`Secret of key ${created.name}`} secret={created.key} onDone={() => setCreated(undefined)} />}
      {adding ? (
        <ApiKeyForm
          onCancel={() => setAdding(false)}
          onCreated={(key) => {
            setAdding(false);
            setCreated(key);
            keys.reload();
          }}
        />
      ) : (
        <p>
          <button type="button" onClick={() => setAdding(true)}>
            Create key
          </button>
        </p>
      )}
      <p class="muted" role="status" aria-live="polite">
        {status}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <Async loaded={keys} what="API keys">
        {(page) =>
          page.data.length === 0 && !cursor.after && !cursor.before ? (
            <EmptyState title="No API keys" method="POST" path="/v1/api-keys" body={{ name: 'ci', scopes: ['agents:run', 'files:read'] }}>
              <p>Create a key with the form above, or with the API:</p>
            </EmptyState>
          ) : (
            <>
              <table class="listing">
                <caption>Keys, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Prefix</th>
                    <th scope="col">Scopes</th>
                    <th scope="col">Rate limits</th>
                    <th scope="col">Created</th>
                    <th scope="col">Revoked</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((key) => (
                    <tr key={key.id} class={key.revoked_at === null ? undefined : 'revoked'}>
                      <th scope="row">
                        {key.name}
                        {key.id === own && <div class="muted">this session's key</div>}
                        <div>
                          <code class="id muted">{key.id}</code>
                        </div>
                      </th>
                      <td>
                        <code>{key.prefix}…</code>
                      </td>
                      <td>
                        <ul class="tags">
                          {key.scopes.map((scope) => (
                            <li key={scope}>
                              <code>{scope}</code>
                            </li>
                          ))}
                        </ul>
                      </td>
                      <td>
                        <RateLimits limits={key.rate_limits} />
                      </td>
                      <td>{formatTime(key.created_at)}</td>
                      <td>
                        {key.revoked_at === null ? (
                          <span class="muted">live</span>
                        ) : (
                          <span class="status status-revoked">revoked {formatTime(key.revoked_at)}</span>
                        )}
                      </td>
                      <td>
                        {key.revoked_at === null && (
                          <ConfirmButton
                            label="Revoke"
                            confirmLabel={`Revoke ${key.name}`}
                            question={
                              key.id === own
                                ? 'This session is signed in with this key: revoking it signs you out. Revoke it?'
                                : 'Requests with this key will answer 401. Revoke it?'
                            }
                            onConfirm={() => revoke(key)}
                          />
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} what="API keys" />
            </>
          )
        }
      </Async>
    </>
  );
}

function RateLimits({ limits }: { limits: ApiKey['rate_limits'] }) {
  if (limits.requests_per_minute === null && limits.concurrent_runs === null) return <span class="muted">the deployment's defaults</span>;
  return (
    <span>
      {limits.requests_per_minute === null ? 'default' : formatCount(limits.requests_per_minute)} requests/min ·{' '}
      {limits.concurrent_runs === null ? 'default' : formatCount(limits.concurrent_runs)} runs at once
    </span>
  );
}
