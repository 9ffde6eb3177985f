/**
 * The next hop of a network run, by its router type. The switch is exhaustive: a router type added to the
 * API document fails to compile here until it has a case, and a type this worker does not know (a network
 * stored by a newer version) fails the run instead of running as another router.
 *
 * A new router type: its branch of `NetworkRouter` and the hop decisions' `router` enums in api/openapi.yaml
 * (then `npm run generate`), a module here and its case below, the AgentNetwork CRD's enum (the unit test
 * network-router-types checks that the three agree), and its label in the console (the compiler asks).
 */
import { nextByHandoff } from './handoff.js';
import type { NetworkRouterType } from '../../../records/networks.js';
import type { RouterDecision, RouterState } from './hop.js';
import { nextInSequence } from './sequential.js';
import { nextBySupervisor, type Supervise } from './supervisor.js';

/** What routers may ask of the world outside the workflow. */
export interface RouterCalls {
  supervise: Supervise;
}

export async function nextHop(router: NetworkRouterType, state: RouterState, calls: RouterCalls): Promise<RouterDecision> {
  switch (router) {
    case 'sequential':
      return nextInSequence(state);
    case 'handoff':
      return nextByHandoff(state);
    case 'supervisor':
      return nextBySupervisor(state, calls.supervise);
    default:
      return unknownRouter(router);
  }
}

function unknownRouter(router: never): RouterDecision {
  return {
    action: 'fail',
    error: { code: 'unknown_router', message: `The network's router type ${JSON.stringify(router)} is not one this platform runs.` },
  };
}
