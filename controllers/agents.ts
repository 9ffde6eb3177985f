/** Agent resources → the platform's agents: the spec in the API's shape, and when a record differs from it. */
import type { Platform, Agent, AgentBody } from './platform.js';
import { differsFrom, type KindHandler } from './reconciler.js';
import type { AgentResource, AgentSpec, AgentToolSpec } from './resources.js';
import { syncSchedules } from './schedules.js';

type Tool = AgentBody['tools'] extends (infer T)[] | undefined ? T : never;
type Body = Omit<AgentBody, 'managed_by' | 'managed_resource'>;

/** The API's tool for the spec's, with the API's defaults filled in, as the API returns it. */
export function toolBody(tool: AgentToolSpec): Tool {
  if (tool.type === 'builtin') return { type: 'builtin', name: tool.name as 'read_file' | 'search_context', ...guardsOf(tool) };
  if (tool.type === 'a2a') {
    return {
      type: 'a2a',
      name: tool.name!,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      card_url: tool.cardUrl!,
      timeout_ms: tool.timeoutMs ?? 60_000,
      ...guardsOf(tool),
    };
  }
  if (tool.type === 'mcp') {
    return {
      type: 'mcp',
      server_label: tool.serverLabel!,
      server_url: tool.serverUrl!,
      ...(tool.allowedTools ? { allowed_tools: tool.allowedTools } : {}),
      timeout_ms: tool.timeoutMs ?? 30_000,
      ...guardsOf(tool),
    };
  }
  return {
    type: 'http',
    name: tool.name!,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    url: tool.url!,
    method: tool.method ?? 'POST',
    ...(tool.parameters ? { parameters: tool.parameters as { type: 'object' } } : {}),
    timeout_ms: tool.timeoutMs ?? 10_000,
    max_response_bytes: tool.maxResponseBytes ?? 65_536,
    ...guardsOf(tool),
  } as Tool;
}

/** A tool's approval and policy, in the API's words. */
function guardsOf(tool: AgentToolSpec): { approval?: Tool['approval']; policy?: Tool['policy'] } {
  const approval = tool.approval;
  return {
    ...(approval
      ? { approval: approval.mode === 'when' ? { mode: 'when', arguments: approval.arguments ?? {} } : { mode: approval.mode } }
      : {}),
    ...(tool.policy ? { policy: { deny_when: tool.policy.denyWhen } } : {}),
  };
}

/** The request body for an Agent's spec; the platform agent is named after the resource. */
export function agentBody(name: string, spec: AgentSpec): Body {
  const settings = spec.modelSettings ?? {};
  return {
    name,
    description: spec.description ?? '',
    model: spec.model,
    instructions: spec.instructions ?? '',
    tools: (spec.tools ?? []).map(toolBody),
    model_settings: {
      ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
      ...(settings.topP !== undefined ? { top_p: settings.topP } : {}),
      ...(settings.maxOutputTokens !== undefined ? { max_output_tokens: settings.maxOutputTokens } : {}),
    },
    concurrency: spec.concurrency ?? 'allow',
    max_steps: spec.maxSteps ?? 10,
    approval_timeout_seconds: spec.approvalTimeoutSeconds ?? 604_800,
    max_cost_usd: spec.maxCostUsd ?? null,
    memory: { enabled: spec.memory?.enabled ?? false },
    metadata: spec.metadata ?? {},
  };
}

export function agentHandler(platform: Platform): KindHandler<AgentSpec, Body, Agent> {
  return {
    kind: 'Agent',
    desired: async (resource: AgentResource) => agentBody(resource.metadata.name, resource.spec),
    get: (id) => platform.getAgent(id),
    findByUid: (uid) => platform.findAgent(uid),
    create: (body, managed) => platform.createAgent({ ...body, managed_by: 'kubernetes', managed_resource: managed }),
    update: (id, body) => platform.updateAgent(id, body),
    differs: differsFrom,
    delete: (id) => platform.deleteAgent(id),
    syncDependents: (resource: AgentResource, record) => syncSchedules(platform, 'Agent', resource, record.id),
  };
}
