/**
 * Who is signed in: the session the API keeps for the cookie (never the API key, which the browser does not
 * store). Held in memory; on load the console asks the API for it again.
 */
import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../api/generated/openapi';

/** A console session as `POST /v1/sessions` and `GET /v1/sessions/current` show it. */
export interface Session {
  object: 'session';
  id: string;
  project_id: string;
  api_key_id: string;
  api_key_name: string;
  scopes: components['schemas']['Scope'][];
  csrf_token: string;
  created_at: number;
  expires_at: number;
}
type State = { status: 'unknown' } | { status: 'signed-out'; reason?: string } | { status: 'signed-in'; session: Session };

let state: State = { status: 'unknown' };
const listeners = new Set<(state: State) => void>();

function set(next: State): void {
  state = next;
  for (const listener of listeners) listener(state);
}

export const session = {
  current: (): Session | undefined => (state.status === 'signed-in' ? state.session : undefined),
  signedIn: (value: Session) => set({ status: 'signed-in', session: value }),
  signedOut: () => set({ status: 'signed-out' }),
  /** The API answered 401: the session expired, was signed out elsewhere, or its key was revoked. */
  ended: (reason = 'Your session has ended. Sign in again.') => {
    if (state.status === 'signed-in') set({ status: 'signed-out', reason });
    else if (state.status === 'unknown') set({ status: 'signed-out' });
  },
};

export function useSession(): State {
  const [value, setValue] = useState(state);
  useEffect(() => {
    listeners.add(setValue);
    setValue(state);
    return () => void listeners.delete(setValue);
  }, []);
  return value;
}
