/**
 * Starts a run of an agent or a network with `stream: true` and follows its event log as it arrives; if the
 * response ends before the run does (a proxy cut it), it goes on from the last event with an EventSource.
 */
import { api, apiUrl, unwrap, type Schemas } from '../api';
import { readSse } from './agents-sse';

type RunEvent = Schemas['RunEvent'];
export type Runnable = { kind: 'agent' | 'network'; id: string };

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);
const EVENT_TYPES: Schemas['RunEventType'][] = [
  'run.created',
  'run.in_progress',
  'run.model_fallback',
  'step.started',
  'output_text.delta',
  'tool_call',
  'step.completed',
  'step.failed',
  'step.cancelled',
  'run.completed',
  'run.failed',
  'run.cancelled',
];

/** Whether an event is the run's own end (a network run's log also carries its hops' ends). */
export const endsRun = (event: RunEvent) => TERMINAL.has(event.type) && event.child_run_id === undefined;

async function start(target: Runnable, input: string, signal: AbortSignal) {
  const init = { params: { path: { id: target.id } }, body: { input, stream: true, wait: true }, parseAs: 'stream' as const, signal };
  const result = target.kind === 'agent' ? await api.POST('/v1/agents/{id}/run', init) : await api.POST('/v1/networks/{id}/run', init);
  // With `parseAs: 'stream'` the data is the response's body, whatever the document says it holds.
  const body = unwrap(result) as unknown as ReadableStream<Uint8Array> | null;
  const location = result.response.headers.get('location');
  return { body, runId: location?.split('/').pop() };
}

function follow(runId: string, after: number, onEvent: (event: RunEvent) => void, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const source = new EventSource(apiUrl(`/v1/runs/${encodeURIComponent(runId)}/events?after=${after}`), { withCredentials: true });
    const close = () => {
      source.close();
      resolve();
    };
    signal.addEventListener('abort', close);
    for (const type of EVENT_TYPES) {
      source.addEventListener(type, (message) => {
        const event = JSON.parse((message as MessageEvent<string>).data) as RunEvent;
        onEvent(event);
        if (endsRun(event)) close();
      });
    }
    source.onerror = () => {
      // A closed stream of an ended run, or the session gone: EventSource would retry forever.
      if (source.readyState === EventSource.CLOSED) reject(new Error('The run’s event stream closed before the run ended.'));
    };
  });
}

/** Streams a new run's events to `onEvent` until the run ends; throws ApiError when the API refuses the run. */
export async function streamRun(target: Runnable, input: string, onEvent: (event: RunEvent) => void, signal: AbortSignal): Promise<void> {
  const { body, runId: located } = await start(target, input, signal);
  let runId = located;
  let lastSeq = 0;
  let ended = false;
  const seen = (event: RunEvent) => {
    if (event.seq <= lastSeq) return;
    lastSeq = event.seq;
    runId ??= event.run_id;
    if (endsRun(event)) ended = true;
    onEvent(event);
  };
  if (body) {
    try {
      for await (const message of readSse(body, signal)) seen(JSON.parse(message.data) as RunEvent);
    } catch (error) {
      if (signal.aborted) return;
      if (!runId) throw error;
    }
  }
  if (!ended && runId && !signal.aborted) await follow(runId, lastSeq, seen, signal);
}
