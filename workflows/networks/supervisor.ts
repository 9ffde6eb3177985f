/**
 * The supervisor router: a model that reads the task and what each hop has answered so far, and picks the
 * next member (or finishes) by calling the `route` tool, always with a reason.
 */
import type { ChatMessage, ToolCall, ToolSpec } from '../../models/messages.js';
import type { AgentRecord } from '../../records/agents.js';
import type { RunRecord } from '../../records/runs.js';

export const ROUTE_TOOL = 'route';
export const FINISH = 'finish';

export interface SupervisorChoice {
  /** The member to run next; null to finish. */
  next: string | null;
  reason: string;
  /** What to ask that member; the network's input when absent. */
  input: string | null;
  /** Set when the reply named no member and did not finish: the run cannot go on. */
  invalid?: string;
}

export function routeToolSpec(members: AgentRecord[]): ToolSpec {
  return {
    name: ROUTE_TOOL,
    description: 'Choose the member that should work next on the task, or finish when the task is done.',
    parameters: {
      type: 'object',
      properties: {
        next: { type: 'string', enum: [...members.map((m) => m.id), FINISH], description: 'A member id, or "finish".' },
        reason: { type: 'string', description: 'Why this member, or why the task is done.' },
        input: { type: 'string', description: 'What to ask the member (defaults to the task itself).' },
      },
      required: ['next', 'reason'],
      additionalProperties: false,
    },
  };
}

export function supervisorMessages(instructions: string, members: AgentRecord[], parent: RunRecord, hops: RunRecord[]): ChatMessage[] {
  const roster = members.map((m) => `- ${m.id}: ${m.name}${m.description ? ` (${m.description})` : ''}`).join('\n');
  const system = [
    instructions,
    `You coordinate a team. Members:\n${roster}`,
    `Call the ${ROUTE_TOOL} tool every time: next is the member who should work now, or "${FINISH}" once the task is done. Always give a reason.`,
  ]
    .filter(Boolean)
    .join('\n\n');
  const done = hops.map((hop) => ({
    role: 'user' as const,
    content: `Member ${hop.agent_id} (hop ${hop.hop_index}) answered:\n${hop.output_text}`,
  }));
  return [{ role: 'system', content: system }, ...parent.input, ...done];
}

/** The supervisor's reply as a choice. A reply without a valid `route` call finishes, with its text as the reason. */
export function choiceOf(reply: { content: string; tool_calls?: ToolCall[] }, members: AgentRecord[]): SupervisorChoice {
  const call = reply.tool_calls?.find((c) => c.name === ROUTE_TOOL);
  if (!call) return { next: null, reason: reply.content || 'The supervisor answered without choosing a member.', input: null };
  let args: { next?: unknown; reason?: unknown; input?: unknown };
  try {
    args = JSON.parse(call.arguments) as typeof args;
  } catch {
    return { next: null, reason: '', input: null, invalid: `The supervisor's ${ROUTE_TOOL} call was not valid JSON.` };
  }
  const reason = typeof args.reason === 'string' && args.reason ? args.reason : 'No reason given.';
  const input = typeof args.input === 'string' && args.input ? args.input : null;
  if (args.next === FINISH) return { next: null, reason, input: null };
  const member = members.find((m) => m.id === args.next);
  if (!member) return { next: null, reason, input: null, invalid: `The supervisor chose ${String(args.next)}, which is not a member.` };
  return { next: member.id, reason, input };
}
