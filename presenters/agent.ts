import type { components } from '../api/generated/openapi.js';
import type { AgentRecord, AgentTool } from '../records/agents.js';
import { unixSeconds } from './time.js';

export type AgentObject = components['schemas']['Agent'];

/** Header values often hold credentials: they are stored, sent with each call, and never shown again. */
export const HIDDEN_HEADER_VALUE = '********';

function presentTool(tool: AgentTool): AgentTool {
  if (tool.type === 'builtin' || !tool.headers) return tool;
  return { ...tool, headers: Object.fromEntries(Object.keys(tool.headers).map((name) => [name, HIDDEN_HEADER_VALUE])) };
}

export function presentAgent(agent: AgentRecord): AgentObject {
  return {
    id: agent.id,
    object: 'agent',
    name: agent.name,
    description: agent.description,
    model: agent.model,
    instructions: agent.instructions,
    tools: agent.tools.map(presentTool),
    model_settings: agent.model_settings,
    concurrency: agent.concurrency,
    max_steps: agent.max_steps,
    approval_timeout_seconds: agent.approval_timeout_seconds,
    max_cost_usd: agent.max_cost_usd,
    memory: agent.memory,
    metadata: agent.metadata,
    managed_by: agent.managed_resource ? 'kubernetes' : null,
    managed_resource: agent.managed_resource,
    version: agent.version,
    created_at: unixSeconds(agent.created_at),
    updated_at: unixSeconds(agent.updated_at),
  };
}

export function presentDeletedAgent(id: string): components['schemas']['DeletedAgent'] {
  return { id, object: 'agent', deleted: true };
}
