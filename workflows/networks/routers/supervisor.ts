/**
 * The supervisor router: before each hop a model picks the next member, what to ask it, and why, or
 * finishes. The model call is the network run's step numbered as the hop (../supervisor.ts builds it).
 */
import type { SupervisorChoice } from '../supervisor.js';
import { finish, type RouterDecision, type RouterState } from './hop.js';

/** Asks the supervisor's model for its choice, recorded as the network run's step `stepIndex`. */
export type Supervise = (stepIndex: number) => Promise<SupervisorChoice>;

export async function nextBySupervisor({ hop }: RouterState, supervise: Supervise): Promise<RouterDecision> {
  const choice = await supervise(hop);
  if (choice.invalid) return { action: 'fail', error: { code: 'invalid_routing_decision', message: choice.invalid } };
  if (!choice.next) return finish;
  return {
    action: 'run',
    hop: {
      agentId: choice.next,
      decision: { router: 'supervisor', reason: choice.reason },
      input: choice.input ? { from: 'supervisor', text: choice.input } : { from: 'network' },
    },
  };
}
