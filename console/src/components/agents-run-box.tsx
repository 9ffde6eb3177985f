/**
 * The "Run" box of an agent or a network: a message, a button, and the answer streaming in as the run's
 * events arrive (each hop of a network run under its member), then a link to the run.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { ApiError, type Schemas } from '../api';
import { IdLink } from './links';
import { endsRun, streamRun, type Runnable } from './agents-run-stream';

type RunEvent = Schemas['RunEvent'];

/** The text of one model call (a step), of the run itself or of one hop of a network run. */
interface Part {
  key: string;
  hop?: string;
  text: string;
}

/** A hop of a network run: the member that runs it and why the router chose it. */
interface Hop {
  agentId?: string;
  reason?: string;
}

interface Progress {
  runId?: string;
  status: 'starting' | 'in_progress' | 'completed' | 'failed' | 'cancelled';
  parts: Part[];
  hops: Record<string, Hop>;
  error?: Schemas['RunError'];
}

function apply(progress: Progress, event: RunEvent): Progress {
  const hop = event.child_run_id;
  const next = { ...progress, runId: progress.runId ?? event.run_id };
  if (event.type === 'run.created' && hop)
    return { ...next, hops: { ...next.hops, [hop]: { agentId: event.agent_id, reason: event.decision?.reason } } };
  if (endsRun(event)) return { ...next, status: event.type.slice(4) as Progress['status'], error: event.error };
  if (event.type === 'run.in_progress' && !hop) return { ...next, status: 'in_progress' };
  const key = `${hop ?? ''}:${event.step ?? 0}`;
  // A step tried again starts its text over.
  if (event.type === 'step.started' && (event.attempt ?? 1) > 1) return { ...next, parts: next.parts.filter((part) => part.key !== key) };
  if (event.type !== 'output_text.delta' || !event.delta) return next;
  const existing = next.parts.find((part) => part.key === key);
  const parts = existing
    ? next.parts.map((part) => (part === existing ? { ...part, text: part.text + event.delta } : part))
    : [...next.parts, { key, hop, text: event.delta }];
  return { ...next, parts };
}

function describe(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === 'budget_exceeded') return `Budget exceeded: ${error.message}`;
    return `${error.message} (${error.status} ${error.code})`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** `names`: agents' names by id, to say which member of a network wrote each part of the answer. */
export function RunBox({ target, onEnded, names = {} }: { target: Runnable; onEnded?: () => void; names?: Record<string, string> }) {
  const [input, setInput] = useState('');
  const [progress, setProgress] = useState<Progress>();
  const [refusal, setRefusal] = useState<string>();
  const running = useRef<AbortController>();
  useEffect(() => () => running.current?.abort(), []);
  const busy = progress?.status === 'starting' || progress?.status === 'in_progress';
  const id = `run-input-${target.id}`;

  async function submit(event: Event) {
    event.preventDefault();
    if (!input.trim() || busy) return;
    const controller = new AbortController();
    running.current = controller;
    setRefusal(undefined);
    setProgress({ status: 'starting', parts: [], hops: {} });
    try {
      await streamRun(
        target,
        input,
        (runEvent) => setProgress((current) => apply(current ?? { status: 'starting', parts: [], hops: {} }, runEvent)),
        controller.signal,
      );
    } catch (error) {
      if (controller.signal.aborted) return;
      setRefusal(describe(error));
      setProgress((current) => (current?.runId ? current : undefined));
    }
    if (!controller.signal.aborted) onEnded?.();
  }

  return (
    <section class="run-box" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>Run</h2>
      <form onSubmit={submit}>
        <div class="field">
          <label for={id}>Message</label>
          <textarea
            id={id}
            value={input}
            onInput={(e) => setInput(e.currentTarget.value)}
            onKeyDown={(e) => e.key === 'Enter' && (e.ctrlKey || e.metaKey) && e.currentTarget.form?.requestSubmit()}
            aria-describedby={`${id}-hint`}
            required
          />
          <span id={`${id}-hint`} class="muted">
            Ctrl+Enter runs it too.
          </span>
        </div>
        <button type="submit" disabled={busy}>
          {busy ? 'Running…' : 'Run'}
        </button>
      </form>
      {refusal && (
        <p class="error" role="alert">
          {refusal}
        </p>
      )}
      {progress && <RunProgress progress={progress} names={names} />}
    </section>
  );
}

const STATUS_TEXT: Record<Progress['status'], string> = {
  starting: 'Starting the run…',
  in_progress: 'Running…',
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

function RunProgress({ progress, names }: { progress: Progress; names: Record<string, string> }) {
  const ended = progress.status === 'completed' || progress.status === 'failed' || progress.status === 'cancelled';
  return (
    <div class="run-progress">
      <p role="status" class={`run-status status-text-${progress.status}`}>
        <span class={`status status-${progress.status}`}>{STATUS_TEXT[progress.status]}</span>
        {progress.runId && (
          <>
            {' '}
            {ended ? 'See the run ' : 'Run '}
            <IdLink id={progress.runId} />
          </>
        )}
      </p>
      {progress.error && (
        <p class="error" role="alert">
          {progress.error.message} ({progress.error.code})
        </p>
      )}
      <div class="run-output" role="log" aria-live="polite" aria-label="Answer">
        {progress.parts.length === 0 && !ended && <p class="muted">Waiting for the answer…</p>}
        {progress.parts.map((part) => (
          <div key={part.key} class="run-part">
            {part.hop && <HopLabel hop={part.hop} of={progress.hops[part.hop]} names={names} />}
            <p class="run-text">{part.text}</p>
          </div>
        ))}
      </div>
    </div>
  );
}

function HopLabel({ hop, of, names }: { hop: string; of?: Hop; names: Record<string, string> }) {
  const agentId = of?.agentId;
  return (
    <p class="muted run-part-label">
      {agentId ? <Link href={`/agents/${encodeURIComponent(agentId)}`}>{names[agentId] ?? agentId}</Link> : 'A member'} in{' '}
      <IdLink id={hop} />
      {of?.reason && <> · {of.reason}</>}
    </p>
  );
}
