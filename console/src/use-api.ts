/**
 * Loads what a view shows, again when its inputs change; `reload` reads it again (after a change). A loader
 * that reads in parts may `show` what it has read so far meanwhile.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  data?: T;
  error?: Error;
  loading: boolean;
  reload: () => void;
}

export function useApi<T>(load: (signal: AbortSignal, show: (partial: T) => void) => Promise<T>, inputs: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  const latest = useRef(load);
  latest.current = load;
  useEffect(() => {
    const controller = new AbortController();
    setState((previous) => ({ data: previous.data, loading: true }));
    const show = (partial: T) => controller.signal.aborted || setState({ data: partial, loading: true });
    latest
      .current(controller.signal, show)
      .then((data) => controller.signal.aborted || setState({ data, loading: false }))
      .catch((error: Error) => controller.signal.aborted || setState({ error, loading: false }));
    return () => controller.abort();
    // Loads again when the inputs change or on reload, not each time the caller passes a new `load` function.
  }, [...inputs, round]);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  return { ...state, reload };
}
