/**
 * The `handoff` tool the platform gives each member of a handoff network: calling it passes the task to
 * another member, and ends this member's hop.
 */
import type { Queryable } from '../../records/db.js';
import { findAgent } from '../../records/agents.js';
import { findNetworkVersion } from '../../records/networks.js';
import { runById, type Handoff, type RunRecord } from '../../records/runs.js';
import type { ToolCall, ToolSpec } from '../../models/messages.js';
import { HANDOFF_TOOL } from './ids.js';

/** The other members of the run's handoff network, or null when the run is not such a hop. */
async function teammatesOf(db: Queryable, run: RunRecord): Promise<{ id: string; name: string; description: string | null }[] | null> {
  if (!run.parent_run_id || run.hop_decision?.router !== 'handoff') return null;
  const parent = await runById(db, run.parent_run_id);
  if (!parent?.network_id || !parent.network_version) return null;
  const network = await findNetworkVersion(db, parent.network_id, parent.network_version);
  if (!network) return null;
  const members = await Promise.all(network.members.filter((id) => id !== run.agent_id).map((id) => findAgent(db, run.project_id, id)));
  return members.filter((m) => m !== null).map((m) => ({ id: m.id, name: m.name, description: m.description }));
}

export async function handoffToolFor(db: Queryable, run: RunRecord): Promise<ToolSpec | null> {
  const teammates = await teammatesOf(db, run);
  if (!teammates || teammates.length === 0) return null;
  const roster = teammates.map((m) => `${m.id} (${m.name}${m.description ? `: ${m.description}` : ''})`).join('; ');
  return {
    name: HANDOFF_TOOL,
    description: `Hand the task over to a teammate better placed to continue it, and stop working on it yourself. Teammates: ${roster}.`,
    parameters: {
      type: 'object',
      properties: {
        to: { type: 'string', enum: teammates.map((m) => m.id), description: 'The teammate who takes over.' },
        reason: { type: 'string', description: 'Why they should take over.' },
        message: { type: 'string', description: 'What they need to know to continue.' },
      },
      required: ['to', 'reason'],
      additionalProperties: false,
    },
  };
}

/** The handoff a `handoff` call asks for, if it names a teammate; null otherwise (the model is told). */
export async function handoffOf(db: Queryable, run: RunRecord, call: ToolCall): Promise<Handoff | null> {
  const teammates = await teammatesOf(db, run);
  if (!teammates) return null;
  try {
    const args = JSON.parse(call.arguments) as { to?: unknown; reason?: unknown; message?: unknown };
    if (!teammates.some((m) => m.id === args.to)) return null;
    return {
      to: args.to as string,
      reason: typeof args.reason === 'string' ? args.reason : '',
      message: typeof args.message === 'string' ? args.message : '',
    };
  } catch {
    return null;
  }
}
