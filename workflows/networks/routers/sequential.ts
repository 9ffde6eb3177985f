/** The sequential router: every member once, in order; each after the first is given its predecessor's output. */
import { finish, type RouterDecision, type RouterState } from './hop.js';

export function nextInSequence({ hop, members }: RouterState): RouterDecision {
  if (hop >= members.length) return finish;
  return {
    action: 'run',
    hop: {
      agentId: members[hop]!,
      decision: { router: 'sequential', reason: `Member ${hop + 1} of ${members.length} in sequence.` },
      input: hop === 0 ? { from: 'network' } : { from: 'previous_hop' },
    },
  };
}
