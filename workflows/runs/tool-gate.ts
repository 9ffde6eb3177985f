/**
 * The start of a tool call's step, past the tool's policy and approval. In one transaction: a call the policy
 * refuses, or that a person rejected (or let expire), completes its step with what the model is told; a call that
 * needs approval and has no decision yet asks for one and waits; any other starts, with the arguments an approver
 * gave if they edited them. Safe to repeat: a retried activity finds the approval, and the decision, it made.
 */
import type { ToolCall } from '../../models/messages.js';
import type { AgentDefinition } from '../../records/agents.js';
import { approvalOfStep, decideApproval, requestApproval, type ApprovalRecord } from '../../records/approvals.js';
import type { Queryable } from '../../records/db.js';
import { beginStep, completeToolStep } from '../../records/run-steps.js';
import { runById, type RunRecord } from '../../records/runs.js';
import type { ToolDefinition } from '../../tools/definitions.js';
import { argumentsOf, definitionOfCall, needsApproval, policyRefusal } from '../../tools/guards.js';

export type Gate =
  /** Run the tool with this call. */
  | { go: ToolCall }
  /** The step is completed without running the tool. */
  | { refused: true }
  /** Waiting for a decision until `expiresAtMs`. */
  | { awaiting: { approvalId: string; expiresAtMs: number } };

export async function passGate(
  tx: Queryable,
  run: RunRecord,
  agent: AgentDefinition,
  stepIndex: number,
  toolCall: ToolCall,
): Promise<Gate> {
  const def = definitionOfCall(agent.tools as ToolDefinition[], toolCall.name);
  const args = argumentsOf(toolCall);
  // Arguments that are not an object are the tool call's own to refuse, with what the model should send instead.
  if (typeof args !== 'string') {
    const refusal = policyRefusal(def, toolCall.name, args);
    if (refusal) return refuse(tx, run.id, stepIndex, toolCall, refusal);
    if (needsApproval(def, args)) {
      let approval = await approvalOfStep(tx, run.id, stepIndex);
      if (!approval) {
        await beginStep(tx, run.id, stepIndex, { type: 'tool_call', toolCall });
        approval = await requestApproval(tx, {
          projectId: run.project_id,
          runId: run.id,
          stepIndex,
          agentId: run.agent_id!,
          networkId: await networkOf(tx, run),
          toolName: toolCall.name,
          arguments: args,
          timeoutSeconds: agent.approval_timeout_seconds,
        });
      }
      if (approval.status === 'pending') approval = (await decideApproval(tx, approval, { status: 'expired' })) ?? approval;
      if (approval.status === 'pending') return { awaiting: { approvalId: approval.id, expiresAtMs: approval.expires_at.getTime() } };
      if (approval.status !== 'approved') return refuse(tx, run.id, stepIndex, toolCall, notRunBecause(approval, agent));
      if (approval.decided_arguments) toolCall = { ...toolCall, arguments: JSON.stringify(approval.decided_arguments) };
    }
  }
  await beginStep(tx, run.id, stepIndex, { type: 'tool_call', toolCall });
  return { go: toolCall };
}

async function refuse(tx: Queryable, runId: string, stepIndex: number, toolCall: ToolCall, content: string): Promise<Gate> {
  await beginStep(tx, runId, stepIndex, { type: 'tool_call', toolCall });
  await completeToolStep(tx, runId, stepIndex, { role: 'tool', tool_call_id: toolCall.id, name: toolCall.name, content, is_error: true });
  return { refused: true };
}

function notRunBecause(approval: ApprovalRecord, agent: AgentDefinition): string {
  if (approval.status === 'expired')
    return `Nobody decided on the call of ${approval.tool_name} within ${agent.approval_timeout_seconds} seconds, so it expired and was not run.`;
  return `A reviewer rejected the call of ${approval.tool_name}${approval.reason ? `: ${approval.reason}` : '.'} It was not run.`;
}

/** The network of the run's tree: its own, or (for a hop) its network run's. */
async function networkOf(db: Queryable, run: RunRecord): Promise<string | null> {
  if (run.network_id || !run.parent_run_id) return run.network_id;
  return (await runById(db, run.parent_run_id))?.network_id ?? null;
}
