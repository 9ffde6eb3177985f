/**
 * Sign-in: the API key is sent once, to be exchanged for a session cookie the script cannot read; the
 * browser keeps neither the key nor the cookie's value where a script could find them.
 */
import { useState } from 'preact/hooks';
import { apiUrl } from './api';
import { session, type Session } from './session';

export async function resumeSession(): Promise<void> {
  try {
    const response = await fetch(apiUrl('/v1/sessions/current'), { headers: { accept: 'application/json' } });
    if (response.ok) session.signedIn((await response.json()) as Session);
    else session.signedOut();
  } catch {
    session.signedOut();
  }
}

export async function signOut(): Promise<void> {
  const token = session.current()?.csrf_token ?? '';
  await fetch(apiUrl('/v1/sessions/current'), { method: 'DELETE', headers: { 'x-csrf-token': token } }).catch(() => undefined);
  session.signedOut();
}

export function SignIn({ reason }: { reason?: string }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const field = form.elements.namedItem('api_key') as HTMLInputElement;
    setBusy(true);
    setError(undefined);
    try {
      const response = await fetch(apiUrl('/v1/sessions'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ api_key: field.value.trim() }),
      });
      const body = await response.json().catch(() => undefined);
      if (!response.ok) {
        setError(body?.error?.message ?? `Signing in failed (HTTP ${response.status}).`);
        return;
      }
      field.value = '';
      session.signedIn(body as Session);
    } catch {
      setError('The API cannot be reached. Try again in a moment.');
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" class="sign-in">
      <h1>Agentplane</h1>
      <form onSubmit={submit} aria-describedby={error || reason ? 'sign-in-message' : undefined}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api_key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          maxLength={128}
          placeholder="ap_…"
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {(error ?? reason) && (
          <p id="sign-in-message" class={error ? 'error' : 'muted'} role={error ? 'alert' : 'status'}>
            {error ?? reason}
          </p>
        )}
      </form>
      <p class="muted">
        The key is exchanged for a session that ends when you sign out, when it expires, or when the key is revoked. The browser does not
        keep the key.
      </p>
    </main>
  );
}
