/**
 * Approvals: the tool calls waiting for a person, oldest first, then the latest decided. The page reads them again
 * every few seconds while it is open, so a call that starts waiting shows up, and one decided elsewhere moves down.
 */
import { useEffect } from 'preact/hooks';
import { api, unwrap } from '../api';
import { ApprovalCard } from '../components/approvals-decision';
import { Async } from '../components/states';
import { useApi } from '../use-api';
import './admin.css';

const REFRESH_MS = 3_000;

export default function ApprovalsView() {
  const pending = useApi(
    (signal) => api.GET('/v1/approvals', { params: { query: { status: 'pending', limit: 100, order: 'asc' } }, signal }).then(unwrap),
    [],
  );
  const recent = useApi((signal) => api.GET('/v1/approvals', { params: { query: { limit: 20, order: 'desc' } }, signal }).then(unwrap), []);
  useEffect(() => {
    const timer = setInterval(() => {
      pending.reload();
      recent.reload();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const decided = () => {
    pending.reload();
    recent.reload();
  };

  return (
    <>
      <h1>Approvals</h1>
      <p class="muted">
        Tool calls that wait for a person before they run. Approve one as asked, edit its arguments first, or reject it; the run goes on
        either way.
      </p>
      <section aria-labelledby="pending-title">
        <h2 id="pending-title">Waiting for a decision</h2>
        <Async loaded={pending} what="pending approvals">
          {(page) =>
            page.data.length === 0 ? (
              <p class="muted">No tool call is waiting.</p>
            ) : (
              page.data.map((approval) => <ApprovalCard key={approval.id} approval={approval} onDecided={decided} />)
            )
          }
        </Async>
      </section>
      <section aria-labelledby="decided-title">
        <h2 id="decided-title">Decided lately</h2>
        <Async loaded={recent} what="recent approvals">
          {(page) => {
            const done = page.data.filter((approval) => approval.status !== 'pending');
            return done.length === 0 ? (
              <p class="muted">Nothing decided yet.</p>
            ) : (
              done.map((approval) => <ApprovalCard key={approval.id} approval={approval} onDecided={decided} />)
            );
          }}
        </Async>
      </section>
    </>
  );
}
