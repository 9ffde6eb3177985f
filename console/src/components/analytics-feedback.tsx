/** Human feedback on a finished run: a score (thumbs up, down, or a number) under an optional name, with a comment. */
import { useState } from 'preact/hooks';
import { api, unwrap } from '../api';
import { IdLink } from './links';

type Status =
  | { state: 'idle' }
  | { state: 'sending' }
  | { state: 'sent'; runId: string; scorer: string; value: number }
  | { state: 'failed'; message: string };

export function FeedbackForm({ onSent }: { onSent: () => void }) {
  const [status, setStatus] = useState<Status>({ state: 'idle' });
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const runId = String(form.get('run_id') ?? '').trim();
    const verdict = String(form.get('verdict'));
    const name = String(form.get('name') ?? '').trim();
    const comment = String(form.get('comment') ?? '').trim();
    const score = verdict === 'thumbs_up' || verdict === 'thumbs_down' ? verdict : Number(form.get('score'));
    setStatus({ state: 'sending' });
    try {
      const run = unwrap(
        await api.POST('/v1/runs/{id}/feedback', {
          params: { path: { id: runId } },
          body: { score, ...(name ? { name } : {}), ...(comment ? { comment } : {}) },
        }),
      );
      const scorer = name ? `human:${name}` : 'human';
      const value =
        run.scores?.find((s) => s.scorer === scorer)?.value ?? (score === 'thumbs_up' ? 1 : score === 'thumbs_down' ? 0 : score);
      setStatus({ state: 'sent', runId: run.id, scorer, value });
      onSent();
    } catch (error) {
      setStatus({ state: 'failed', message: (error as Error).message });
    }
  };
  const [verdict, setVerdict] = useState('thumbs_up');

  return (
    <form class="feedback" onSubmit={submit} aria-labelledby="feedback-title">
      <h2 id="feedback-title">Add feedback to a run</h2>
      <div class="row">
        <div class="field">
          <label for="feedback-run">Run id</label>
          <input id="feedback-run" name="run_id" required pattern="run_[A-Za-z0-9_-]+" placeholder="run_…" />
        </div>
        <div class="field">
          <label for="feedback-verdict">Verdict</label>
          <select id="feedback-verdict" name="verdict" value={verdict} onChange={(e) => setVerdict(e.currentTarget.value)}>
            <option value="thumbs_up">Thumbs up (1)</option>
            <option value="thumbs_down">Thumbs down (0)</option>
            <option value="score">A score from 0 to 1</option>
          </select>
        </div>
        {verdict === 'score' && (
          <div class="field">
            <label for="feedback-score">Score</label>
            <input id="feedback-score" name="score" type="number" min="0" max="1" step="0.01" required />
          </div>
        )}
        <div class="field">
          <label for="feedback-name">Name (optional)</label>
          <input id="feedback-name" name="name" pattern="[a-z0-9_\-]{1,40}" placeholder="helpfulness" />
        </div>
      </div>
      <div class="field">
        <label for="feedback-comment">Comment (optional)</label>
        <textarea id="feedback-comment" name="comment" maxLength={2000} />
      </div>
      <button type="submit" disabled={status.state === 'sending'}>
        Send feedback
      </button>
      <p role="status" aria-live="polite" class={status.state === 'failed' ? 'error' : 'muted'}>
        {status.state === 'sending' && 'Sending…'}
        {status.state === 'failed' && `Not recorded: ${status.message}`}
        {status.state === 'sent' && (
          <>
            Recorded {status.scorer} = {status.value} on <IdLink id={status.runId} />.
          </>
        )}
      </p>
    </form>
  );
}
