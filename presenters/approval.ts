import type { components } from '../api/generated/openapi.js';
import type { ApprovalRecord } from '../records/approvals.js';
import { unixSeconds } from './time.js';

export type ApprovalObject = components['schemas']['Approval'];

export function presentApproval(approval: ApprovalRecord): ApprovalObject {
  return {
    id: approval.id,
    object: 'approval',
    status: approval.status,
    run_id: approval.run_id,
    step: approval.step_index,
    agent_id: approval.agent_id,
    network_id: approval.network_id,
    tool_name: approval.tool_name,
    arguments: approval.arguments,
    decided_arguments: approval.decided_arguments,
    reason: approval.reason,
    decided_by: approval.decided_by,
    created_at: unixSeconds(approval.created_at),
    expires_at: unixSeconds(approval.expires_at),
    decided_at: unixSeconds(approval.decided_at),
  };
}
