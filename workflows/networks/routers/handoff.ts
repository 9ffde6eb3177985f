/**
 * The handoff router: the first member takes the task; a member that calls the `handoff` tool passes it on,
 * and the run finishes when a member answers without handing off.
 */
import { finish, type RouterDecision, type RouterState } from './hop.js';

export function nextByHandoff({ hop, members, previous }: RouterState): RouterDecision {
  if (hop === 0) {
    return {
      action: 'run',
      hop: {
        agentId: members[0]!,
        decision: { router: 'handoff', reason: 'The first member takes the task.' },
        input: { from: 'network' },
      },
    };
  }
  if (!previous?.handoff) return finish;
  return {
    action: 'run',
    hop: {
      agentId: previous.handoff.to,
      decision: { router: 'handoff', reason: `Handed over by ${previous.agentId}: ${previous.handoff.reason}` },
      input: { from: 'handoff' },
    },
  };
}
