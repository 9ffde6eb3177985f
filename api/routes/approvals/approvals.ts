/**
 * /v1/approvals: tool calls that wait for a person. A decision is recorded once, in the transaction that announces
 * it (`approval.resolved`), then the run's workflow is told; a signal lost on the way is made up for by the
 * workflow looking on its own (workflows/runs/workflow.ts).
 */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireAnyScope, requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation, type Input } from '../../validation.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import type { Queryable } from '../../../records/db.js';
import { decideApproval, findApproval, listApprovals, type ApprovalRecord } from '../../../records/approvals.js';
import { findAgentVersion } from '../../../records/agents.js';
import { runById, toolSpecsOf } from '../../../records/runs.js';
import type { ToolSpec } from '../../../models/messages.js';
import type { ToolDefinition } from '../../../tools/definitions.js';
import { compiledSchema } from '../../../tools/argument-schemas.js';
import { definitionOfCall, policyRefusal } from '../../../tools/guards.js';
import { signalApprovalDecided } from '../../../workflows/runs/client.js';
import { presentApproval } from '../../../presenters/approval.js';
import { presentList } from '../../../presenters/list.js';

/** Why arguments an approver gave may not be used: the tool's parameters, as the run offered it, and its policy. */
async function editedArgumentsProblem(db: Queryable, approval: ApprovalRecord, args: Record<string, unknown>): Promise<string | null> {
  const specs = ((await toolSpecsOf(db, approval.run_id)) ?? []) as ToolSpec[];
  const spec = specs.find((offered) => offered.name === approval.tool_name);
  if (spec) {
    const schema = compiledSchema(spec.parameters);
    const problem = 'problem' in schema ? `the tool's parameters schema ${schema.problem}` : schema.check(args);
    if (problem) return `The arguments do not match the tool's parameters: ${problem}`;
  }
  const run = await runById(db, approval.run_id);
  const agent = run?.agent_id && run.agent_version ? await findAgentVersion(db, run.agent_id, run.agent_version) : null;
  const def = agent ? definitionOfCall(agent.tools as ToolDefinition[], approval.tool_name) : undefined;
  return policyRefusal(def, approval.tool_name, args);
}

type DecisionBody = Input<'decideApproval'>['body'];

export function approvalRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  const reads = requireAnyScope('approvals:read', 'approvals:write');

  router.get(
    '/v1/approvals',
    reads,
    operation('listApprovals', async (ctx, { query }) => {
      const filter = { status: query.status, agentId: query.agent_id, networkId: query.network_id, runId: query.run_id };
      ctx.body = presentList(await listApprovals(deps.db, callerOf(ctx).projectId, pageRequestOf(query), filter), presentApproval);
    }),
  );

  router.get(
    '/v1/approvals/:id',
    reads,
    operation('getApproval', async (ctx, { path: { id } }) => {
      const approval = await findApproval(deps.db, callerOf(ctx).projectId, id);
      if (!approval) throw NotFoundError('approval', id);
      ctx.body = presentApproval(approval);
    }),
  );

  router.post(
    '/v1/approvals/:id',
    audited(deps.db, 'approval.decide', 'approval'),
    requireScope('approvals:write'),
    operation('decideApproval', async (ctx, { path: { id }, body }) => {
      const caller = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const approval = await findApproval(tx, caller.projectId, id, { lock: true });
        if (!approval) throw NotFoundError('approval', id);
        if (approval.status !== 'pending') throw decidedAlready(approval);
        const decided = await decide(tx, approval, body, caller.apiKeyId);
        // An approval whose time ran out is expired, whether or not its run has noticed yet.
        if (!decided) throw decidedAlready({ ...approval, status: 'expired' });
        return { status: 200, body: presentApproval(decided), runId: decided.run_id };
      });
      await signalApprovalDecided(deps.temporal, answer.runId, id).catch((err) =>
        ctx.state.log.warn({ err, approval_id: id }, 'could not tell the run of the decision; it finds it when it next looks'),
      );
      respond(ctx, { status: answer.status, body: answer.body });
    }),
  );

  async function decide(tx: Queryable, approval: ApprovalRecord, body: DecisionBody, apiKeyId: string): Promise<ApprovalRecord | null> {
    if (body.decision === 'reject') return decideApproval(tx, approval, { status: 'rejected', reason: body.reason, decidedBy: apiKeyId });
    if (body.arguments !== undefined) {
      const problem = await editedArgumentsProblem(tx, approval, body.arguments);
      if (problem) throw InvalidRequestError('invalid_arguments', problem, 'arguments');
    }
    return decideApproval(tx, approval, {
      status: 'approved',
      arguments: body.arguments,
      reason: body.reason,
      decidedBy: apiKeyId,
    });
  }
}

function decidedAlready(approval: ApprovalRecord): Error {
  return ConflictError('approval_decided', `Approval ${approval.id} was already decided: it is ${approval.status}.`);
}
