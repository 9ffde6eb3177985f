/**
 * One approval: the call as the model asked for it, and either the form to decide it (approve as asked, approve
 * with the arguments edited as JSON, or reject with a reason) or the decision made.
 */
import { useState } from 'preact/hooks';
import { api, unwrap, type Schemas } from '../api';
import { formatTime } from '../format';
import { IdLink } from './links';

type Approval = Schemas['Approval'];

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

/** The decision as a sentence: who decided what, when, and why. */
export function DecisionSummary({ approval }: { approval: Approval }) {
  const when = formatTime(approval.decided_at);
  const by = approval.decided_by ? ` by ${approval.decided_by}` : '';
  // The sentence ends with its own full stop.
  const because = approval.reason ? `: ${approval.reason.replace(/\.$/, '')}` : '';
  switch (approval.status) {
    case 'approved':
      return (
        <>
          <p>
            Approved{by} at {when}
            {approval.decided_arguments ? ', with edited arguments' : ''}
            {because}.
          </p>
          {approval.decided_arguments && <pre aria-label="Arguments as approved">{pretty(approval.decided_arguments)}</pre>}
        </>
      );
    case 'rejected':
      return (
        <p>
          Rejected{by} at {when}
          {because}.
        </p>
      );
    case 'expired':
      return <p>Expired at {when}: nobody decided in time, so it counted as a rejection.</p>;
    case 'cancelled':
      return <p>Cancelled with its run at {when}.</p>;
    default:
      return <p>Waiting for a decision until {formatTime(approval.expires_at)}.</p>;
  }
}

/** The form that decides a pending approval; `onDecided` gets the approval as decided. */
export function DecisionForm({ approval, onDecided }: { approval: Approval; onDecided: (decided: Approval) => void }) {
  const asked = pretty(approval.arguments);
  const [text, setText] = useState(asked);
  const [reason, setReason] = useState('');
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);

  const decide = async (decision: 'approve' | 'reject') => {
    let edited: Record<string, unknown> | undefined;
    if (decision === 'approve' && text.trim() !== asked) {
      try {
        edited = JSON.parse(text) as Record<string, unknown>;
      } catch (err) {
        setProblem(`The arguments are not JSON: ${(err as Error).message}`);
        return;
      }
    }
    setBusy(true);
    setProblem(undefined);
    try {
      const body = { decision, ...(edited ? { arguments: edited } : {}), ...(reason.trim() ? { reason: reason.trim() } : {}) };
      onDecided(unwrap(await api.POST('/v1/approvals/{id}', { params: { path: { id: approval.id } }, body })));
    } catch (err) {
      setProblem((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="decision" aria-label={`Decide the call of ${approval.tool_name}`} onSubmit={(event) => event.preventDefault()}>
      <label>
        Arguments (JSON; edit them to approve the call with yours)
        <textarea rows={Math.min(12, asked.split('\n').length + 1)} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </label>
      <label>
        Reason (optional; the model reads it)
        <input type="text" maxLength={1000} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
      {problem && (
        <p role="alert" class="error">
          {problem}
        </p>
      )}
      <p class="actions">
        <button type="button" disabled={busy} onClick={() => void decide('approve')}>
          {text.trim() === asked ? 'Approve' : 'Approve with these arguments'}
        </button>
        <button type="button" class="danger" disabled={busy} onClick={() => void decide('reject')}>
          Reject
        </button>
      </p>
    </form>
  );
}

/** An approval in full: what was asked, by which run, and its decision or the form to make one. */
export function ApprovalCard({ approval, onDecided }: { approval: Approval; onDecided: (decided: Approval) => void }) {
  return (
    <article class="approval" aria-label={`${approval.tool_name} for ${approval.run_id}`}>
      <h3>
        {approval.tool_name} <span class="muted">({approval.status})</span>
      </h3>
      <dl class="facts">
        <dt>Run</dt>
        <dd>
          <IdLink id={approval.run_id} />, step {approval.step}
        </dd>
        <dt>Agent</dt>
        <dd>
          <IdLink id={approval.agent_id} />
          {approval.network_id && (
            <>
              {' '}
              in <IdLink id={approval.network_id} />
            </>
          )}
        </dd>
        <dt>Asked</dt>
        <dd>{formatTime(approval.created_at)}</dd>
      </dl>
      {approval.status === 'pending' ? (
        <DecisionForm approval={approval} onDecided={onDecided} />
      ) : (
        <>
          <details>
            <summary>Arguments as the model asked for them</summary>
            <pre>{pretty(approval.arguments)}</pre>
          </details>
          <DecisionSummary approval={approval} />
        </>
      )}
    </article>
  );
}
