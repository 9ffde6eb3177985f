/** One step of a run in full: what went in, what came out, and what it cost. */
import type { Schemas } from '../api';
import { formatCount, formatDuration, formatTime, formatUsd } from '../format';
import { IdLink } from './links';
import { StepApproval } from './approvals-step';
import { StatusBadge } from './runs-bars';
import type { Run, RunStep, StepRow } from './runs-tree';

type RunMessage = Schemas['RunMessage'];

/** The message a completed step added to the conversation: a model call's reply, a tool call's result. */
function messageOf(step: RunStep): RunMessage | undefined {
  if (step.status !== 'completed' || step.output === undefined) return undefined;
  if (step.type === 'model_call')
    return { role: 'assistant', content: step.output, ...(step.tool_calls ? { tool_calls: step.tool_calls } : {}) };
  return { role: 'tool', content: step.output, name: step.tool_call?.name, tool_call_id: step.tool_call?.id, is_error: step.is_error };
}

/** What the model was given: the run's input and every message of the run before this call's reply. */
function promptOf(run: Run, index: number): RunMessage[] {
  const before = run.steps.filter((s) => s.index < index).map(messageOf);
  return [...run.input, ...before.filter((m): m is RunMessage => m !== undefined)];
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function Messages({ messages }: { messages: RunMessage[] }) {
  return (
    <ol class="messages">
      {messages.map((m, i) => (
        <li key={i}>
          <span class="muted">
            {m.role}
            {m.name ? ` (${m.name})` : ''}
          </span>
          <pre>{m.content || (m.tool_calls ? m.tool_calls.map((c) => `${c.name}(${c.arguments})`).join('\n') : '')}</pre>
        </li>
      ))}
    </ol>
  );
}

export function StepDetail({ row, run }: { row: StepRow; run: Run }) {
  const { step } = row;
  const reply = step.type === 'model_call' ? messageOf(step) : undefined;
  const prompt = step.type === 'model_call' ? promptOf(run, step.index) : [];
  const title = `${row.hop === undefined ? '' : `Hop ${row.hop}, `}step ${step.index}: ${step.type === 'model_call' ? `model call to ${step.model ?? 'a model'}` : `tool call ${step.tool_call?.name ?? ''}`}`;
  return (
    <section class="step-detail" aria-labelledby="step-detail-title">
      <h2 id="step-detail-title">{title.charAt(0).toUpperCase() + title.slice(1)}</h2>
      <dl class="facts">
        <dt>Run</dt>
        <dd>
          <IdLink id={row.runId} />
        </dd>
        <dt>Status</dt>
        <dd>
          <StatusBadge status={step.status} />
        </dd>
        <dt>Started</dt>
        <dd>{formatTime(step.started_at)}</dd>
        <dt>Queued</dt>
        <dd>{formatDuration(step.queued_ms)}</dd>
        <dt>Ran</dt>
        <dd>{step.duration_ms === null ? 'still running' : formatDuration(step.duration_ms)}</dd>
        {step.usage && (
          <>
            <dt>Tokens</dt>
            <dd>
              {formatCount(step.usage.input_tokens)} in ({formatCount(step.usage.cached_tokens)} cached),{' '}
              {formatCount(step.usage.output_tokens)} out
            </dd>
          </>
        )}
        {step.cost !== undefined && (
          <>
            <dt>Cost</dt>
            <dd>
              {formatUsd(step.cost)}
              {step.price_version && <span class="muted"> at prices of {step.price_version}</span>}
            </dd>
          </>
        )}
      </dl>
      {step.error && (
        <p class="error">
          {step.error.code}: {step.error.message}
        </p>
      )}
      {step.type === 'model_call' && (
        <>
          <details>
            <summary>
              Input ({prompt.length} {prompt.length === 1 ? 'message' : 'messages'})
            </summary>
            <Messages messages={prompt} />
          </details>
          <h3>Output</h3>
          {reply ? <Messages messages={[reply]} /> : <p class="muted">{step.status === 'in_progress' ? 'Being written…' : 'No reply.'}</p>}
        </>
      )}
      {step.type === 'tool_call' && (
        <>
          <h3>Arguments</h3>
          <pre>{step.tool_call ? prettyJson(step.tool_call.arguments) : '—'}</pre>
          {step.approval_id && <StepApproval id={step.approval_id} stepStatus={step.status} />}
          {step.remote_task && (
            <>
              <h3>Remote task</h3>
              <dl class="facts">
                <dt>Task</dt>
                <dd>
                  <code>{step.remote_task.task_id}</code>
                </dd>
                <dt>Context</dt>
                <dd>
                  <code>{step.remote_task.context_id}</code>
                </dd>
                {step.remote_task.run_id && (
                  <>
                    <dt>Remote run</dt>
                    <dd>
                      <code>{step.remote_task.run_id}</code>
                    </dd>
                  </>
                )}
              </dl>
            </>
          )}
          <h3>Result{step.is_error ? ' (an error, shown to the model)' : ''}</h3>
          <pre>{step.output ?? (step.status === 'in_progress' ? 'Running…' : '—')}</pre>
          {step.citations && step.citations.length > 0 && (
            <>
              <h3>Citations</h3>
              <ul class="citations">
                {step.citations.map((c, i) => (
                  <li key={i}>
                    <IdLink id={c.file_id} /> {c.filename}
                    {c.page !== null ? `, page ${c.page}` : ''}
                    {c.start_ms !== null ? `, ${formatDuration(c.start_ms)}–${formatDuration(c.end_ms)}` : ''}: <q>{c.quote}</q>
                  </li>
                ))}
              </ul>
            </>
          )}
        </>
      )}
    </section>
  );
}
