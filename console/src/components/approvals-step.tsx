/** A tool step's approval on the run's page: the decision made, or the form to make it while the call waits. */
import { api, unwrap } from '../api';
import { useApi } from '../use-api';
import { DecisionForm, DecisionSummary } from './approvals-decision';
import { Async } from './states';

/** `stepStatus`: read again as the step moves on (a decision made elsewhere, or the call's end). */
export function StepApproval({ id, stepStatus }: { id: string; stepStatus: string }) {
  const approval = useApi((signal) => api.GET('/v1/approvals/{id}', { params: { path: { id } }, signal }).then(unwrap), [id, stepStatus]);
  return (
    <section class="step-approval" aria-label="Approval">
      <h3>Approval</h3>
      <Async loaded={approval} what="the approval">
        {(found) =>
          found.status === 'pending' ? <DecisionForm approval={found} onDecided={approval.reload} /> : <DecisionSummary approval={found} />
        }
      </Async>
    </section>
  );
}
