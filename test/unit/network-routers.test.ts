import assert from 'node:assert/strict';
import { nextByHandoff } from '../../workflows/networks/routers/handoff.js';
import type { RouterState } from '../../workflows/networks/routers/hop.js';
import { nextHop } from '../../workflows/networks/routers/next-hop.js';
import { nextInSequence } from '../../workflows/networks/routers/sequential.js';
import { nextBySupervisor } from '../../workflows/networks/routers/supervisor.js';
import type { SupervisorChoice } from '../../workflows/networks/supervisor.js';

const members = ['agt_a', 'agt_b', 'agt_c'];
const atHop = (hop: number, previous: RouterState['previous'] = null): RouterState => ({ hop, members, previous });
const noSupervisor = () => Promise.reject(new Error('this router asks no supervisor'));

describe('network routers', () => {
  describe('sequential', () => {
    it('gives the first member the network run’s input, and each next member the previous output', () => {
      assert.deepEqual(nextInSequence(atHop(0)), {
        action: 'run',
        hop: { agentId: 'agt_a', decision: { router: 'sequential', reason: 'Member 1 of 3 in sequence.' }, input: { from: 'network' } },
      });
      assert.deepEqual(nextInSequence(atHop(2, { agentId: 'agt_b', handoff: null })), {
        action: 'run',
        hop: {
          agentId: 'agt_c',
          decision: { router: 'sequential', reason: 'Member 3 of 3 in sequence.' },
          input: { from: 'previous_hop' },
        },
      });
    });

    it('finishes once every member has run', () => {
      assert.deepEqual(nextInSequence(atHop(3, { agentId: 'agt_c', handoff: null })), { action: 'finish' });
    });
  });

  describe('handoff', () => {
    it('gives the task to the first member', () => {
      assert.deepEqual(nextByHandoff(atHop(0)), {
        action: 'run',
        hop: { agentId: 'agt_a', decision: { router: 'handoff', reason: 'The first member takes the task.' }, input: { from: 'network' } },
      });
    });

    it('passes the task to the member the previous one handed it to, with that member’s reason', () => {
      assert.deepEqual(nextByHandoff(atHop(1, { agentId: 'agt_a', handoff: { to: 'agt_c', reason: 'needs an expert' } })), {
        action: 'run',
        hop: {
          agentId: 'agt_c',
          decision: { router: 'handoff', reason: 'Handed over by agt_a: needs an expert' },
          input: { from: 'handoff' },
        },
      });
    });

    it('finishes when a member answers without handing off', () => {
      assert.deepEqual(nextByHandoff(atHop(1, { agentId: 'agt_a', handoff: null })), { action: 'finish' });
    });
  });

  describe('supervisor', () => {
    const choosing = (choice: SupervisorChoice) => {
      const asked: number[] = [];
      return { asked, supervise: async (stepIndex: number) => (asked.push(stepIndex), choice) };
    };

    it('runs the member the supervisor chose, asked what it said to ask, and records the step as the hop’s number', async () => {
      const model = choosing({ next: 'agt_b', reason: 'writes best', input: 'Write the summary.' });
      assert.deepEqual(await nextBySupervisor(atHop(2, { agentId: 'agt_a', handoff: null }), model.supervise), {
        action: 'run',
        hop: {
          agentId: 'agt_b',
          decision: { router: 'supervisor', reason: 'writes best' },
          input: { from: 'supervisor', text: 'Write the summary.' },
        },
      });
      assert.deepEqual(model.asked, [2]);
    });

    it('gives the chosen member the network run’s input when the supervisor said nothing to ask', async () => {
      const decided = await nextBySupervisor(atHop(0), choosing({ next: 'agt_c', reason: 'first', input: null }).supervise);
      assert.deepEqual(decided.action === 'run' && decided.hop.input, { from: 'network' });
    });

    it('finishes when the supervisor finishes', async () => {
      assert.deepEqual(await nextBySupervisor(atHop(1), choosing({ next: null, reason: 'done', input: null }).supervise), {
        action: 'finish',
      });
    });

    it('fails the run with invalid_routing_decision when the supervisor named no member', async () => {
      const invalid = 'The supervisor chose agt_x, which is not a member.';
      assert.deepEqual(await nextBySupervisor(atHop(0), choosing({ next: null, reason: 'x', input: null, invalid }).supervise), {
        action: 'fail',
        error: { code: 'invalid_routing_decision', message: invalid },
      });
    });
  });

  describe('the choice of router', () => {
    it('decides each hop with the network’s router', async () => {
      assert.equal((await nextHop('sequential', atHop(0), { supervise: noSupervisor })).action, 'run');
      const handedOff = await nextHop('handoff', atHop(1, { agentId: 'agt_a', handoff: { to: 'agt_b', reason: 'r' } }), {
        supervise: noSupervisor,
      });
      assert.equal(handedOff.action === 'run' && handedOff.hop.agentId, 'agt_b');
      const supervised = await nextHop('supervisor', atHop(0), { supervise: async () => ({ next: 'agt_c', reason: 'r', input: null }) });
      assert.equal(supervised.action === 'run' && supervised.hop.agentId, 'agt_c');
    });

    it('fails the run with unknown_router for a router type it does not know, instead of running it as another', async () => {
      const decided = await nextHop('round_robin' as never, atHop(0), { supervise: noSupervisor });
      assert.deepEqual(decided, {
        action: 'fail',
        error: { code: 'unknown_router', message: 'The network\'s router type "round_robin" is not one this platform runs.' },
      });
    });
  });
});
