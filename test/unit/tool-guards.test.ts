import assert from 'node:assert/strict';
import { argumentsValidator, UNCHECKABLE } from '../../tools/argument-schemas.js';
import type { HttpToolDefinition } from '../../tools/definitions.js';
import { needsApproval, policyRefusal } from '../../tools/guards.js';

// Arguments with `to` lead this schema back into itself without end; others are checked as usual.
const endlessFor = (key: string) => ({ type: 'object', required: ['amount'], dependentSchemas: { [key]: { $ref: '#' } } });

const payments = (guards: Pick<HttpToolDefinition, 'approval' | 'policy'>): HttpToolDefinition => ({
  type: 'http',
  name: 'pay',
  url: 'https://payments.example.com/pay',
  ...guards,
});

describe('tool guards', () => {
  it('refuses by policy, and asks for approval of, a call whose arguments the schema cannot check, never letting it by', () => {
    assert.equal(argumentsValidator(endlessFor('to'))({ amount: 1, to: 'x' }), UNCHECKABLE);
    const denied = payments({ policy: { deny_when: endlessFor('to') } });
    assert.match(policyRefusal(denied, 'pay', { amount: 1, to: 'casino' }) ?? '', /refused by the tool's policy/);
    assert.equal(policyRefusal(denied, 'pay', { currency: 'EUR' }), null, 'arguments the schema checks and does not match pass');
    const approved = payments({ approval: { mode: 'when', arguments: endlessFor('to') } });
    assert.equal(needsApproval(approved, { amount: 1, to: 'casino' }), true);
    assert.equal(needsApproval(approved, { currency: 'EUR' }), false);
  });
});
