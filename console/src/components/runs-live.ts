/**
 * A run followed live: its event stream (an EventSource, which resumes after a reconnect from the last
 * event it received, by Last-Event-ID) gives the text as it is written, and says when the run's steps or
 * status changed so the view reads the run again.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { apiUrl } from '../api';

const STEP_EVENTS = [
  'run.in_progress',
  'step.started',
  'step.completed',
  'step.failed',
  'step.cancelled',
  'tool_call',
  'run.model_fallback',
  'run.created',
  'approval.requested',
  'approval.resolved',
];
const TERMINAL_EVENTS = ['run.completed', 'run.failed', 'run.cancelled'];
// Reading a long run again on every event would cost more than the events: at most this often.
const REFRESH_MS = 400;

interface StreamedEvent {
  step?: number;
  delta?: string;
  attempt?: number;
  child_run_id?: string;
}

export interface LiveOutput {
  /** The text of the step being written (the latest with text), as streamed so far. */
  text: string;
  /** Whether the stream is open. */
  following: boolean;
}

/** Follows run `runId` while `active`; `changed` is called (at most every REFRESH_MS) when it should be read again. */
export function useRunEvents(runId: string, active: boolean, changed: () => void): LiveOutput {
  const [live, setLive] = useState<LiveOutput>({ text: '', following: false });
  const latest = useRef(changed);
  latest.current = changed;

  useEffect(() => {
    if (!active) return;
    const source = new EventSource(apiUrl(`/v1/runs/${encodeURIComponent(runId)}/events`));
    const texts = new Map<string, string>();
    let current = '';
    let timer: ReturnType<typeof setTimeout> | undefined;
    const refresh = () => {
      timer ??= setTimeout(() => {
        timer = undefined;
        latest.current();
      }, REFRESH_MS);
    };
    const parse = (event: MessageEvent<string>): StreamedEvent => {
      try {
        return JSON.parse(event.data) as StreamedEvent;
      } catch {
        return {};
      }
    };
    const keyOf = (data: StreamedEvent) => `${data.child_run_id ?? ''}:${data.step ?? 0}`;

    source.addEventListener('open', () => setLive((state) => ({ ...state, following: true })));
    source.addEventListener('output_text.delta', (event) => {
      const data = parse(event);
      const key = keyOf(data);
      texts.set(key, (texts.get(key) ?? '') + (data.delta ?? ''));
      current = key;
      setLive({ text: texts.get(key) ?? '', following: true });
    });
    for (const type of STEP_EVENTS) {
      source.addEventListener(type, (event) => {
        const data = parse(event as MessageEvent<string>);
        // A step tried again writes its text over.
        if (type === 'step.started' && (data.attempt ?? 1) > 1) {
          texts.delete(keyOf(data));
          if (current === keyOf(data)) setLive({ text: '', following: true });
        }
        refresh();
      });
    }
    for (const type of TERMINAL_EVENTS) {
      source.addEventListener(type, (event) => {
        refresh();
        // A hop's end is in its network run's log too; only the run's own end closes the stream (the
        // server closes it then, and an EventSource left open would reconnect).
        if (parse(event as MessageEvent<string>).child_run_id === undefined) {
          source.close();
          setLive((state) => ({ ...state, following: false }));
        }
      });
    }
    return () => {
      source.close();
      if (timer) clearTimeout(timer);
    };
  }, [runId, active]);

  return live;
}
