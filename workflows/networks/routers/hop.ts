/**
 * What a router reads to decide a network run's next hop, and what it decides. Routers are workflow code:
 * deterministic, no I/O; a router that needs a model asks through the call it is given.
 */
import type { HopDecision, RunError } from '../../../records/runs.js';
import type { HopInput } from '../activities.js';

export interface RouterState {
  /** The number of the hop to decide, from 0. */
  hop: number;
  /** The network's members, in its order. */
  members: string[];
  /** The hop before this one, ended: its member, and whom it handed the task to, if anyone. */
  previous: { agentId: string; handoff: { to: string; reason: string } | null } | null;
}

export interface NextHop {
  agentId: string;
  decision: HopDecision;
  input: HopInput;
}

export type RouterDecision = { action: 'run'; hop: NextHop } | { action: 'finish' } | { action: 'fail'; error: RunError };

export const finish: RouterDecision = { action: 'finish' };
