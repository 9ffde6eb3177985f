/** Creating an API key: its name, the scopes it holds and, if it should not take the defaults, its rate limits. */
import { useState } from 'preact/hooks';
import { api, unwrap, type Schemas } from '../api';
import { SCOPE_HELP, SCOPES } from './admin-enums';

export function ApiKeyForm({ onCreated, onCancel }: { onCreated: (key: Schemas['ApiKeyWithSecret']) => void; onCancel: () => void }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const scopes = SCOPES.filter((scope) => data.getAll('scope').includes(scope));
    if (scopes.length === 0) {
      setError('Choose at least one scope.');
      return;
    }
    const limit = (name: string) => {
      const text = String(data.get(name) ?? '').trim();
      return text === '' ? null : Number(text);
    };
    const requests_per_minute = limit('requests_per_minute');
    const concurrent_runs = limit('concurrent_runs');
    setBusy(true);
    setError(undefined);
    try {
      const key = unwrap(
        await api.POST('/v1/api-keys', {
          body: {
            name: String(data.get('name')).trim(),
            scopes,
            ...(requests_per_minute !== null || concurrent_runs !== null ? { rate_limits: { requests_per_minute, concurrent_runs } } : {}),
          },
        }),
      );
      onCreated(key);
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="key-form-title">
      <h2 id="key-form-title">New API key</h2>
      <div class="field">
        <label for="key-name">Name</label>
        <input id="key-name" name="name" required maxLength={128} />
      </div>
      <fieldset>
        <legend>Scopes</legend>
        <div class="checks">
          {SCOPES.map((scope) => (
            <label class="check" key={scope}>
              <input type="checkbox" name="scope" value={scope} /> <code>{scope}</code>
              {SCOPE_HELP[scope] && <span class="muted"> ({SCOPE_HELP[scope]})</span>}
            </label>
          ))}
        </div>
      </fieldset>
      <fieldset>
        <legend>Rate limits (empty: the deployment's defaults)</legend>
        <div class="row">
          <div class="field">
            <label for="key-rpm">Requests per minute</label>
            <input id="key-rpm" name="requests_per_minute" type="number" min={1} max={1000000} step={1} />
          </div>
          <div class="field">
            <label for="key-runs">Runs at once</label>
            <input id="key-runs" name="concurrent_runs" type="number" min={1} max={100000} step={1} />
          </div>
        </div>
      </fieldset>
      <div class="row">
        <button type="submit" disabled={busy}>
          Create key
        </button>
        <button type="button" class="plain" onClick={onCancel}>
          Cancel
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
