import assert from 'node:assert/strict';
import { checkJsonBody, type OperationId } from '../../api/validation.js';
import { ApiError } from '../../api/errors.js';

/** The refusal of `body` as the request of `operationId`: its code, param and message. */
function refusal(operationId: OperationId, body: unknown): { code: string; param: string | null; message: string } {
  try {
    checkJsonBody(operationId, body);
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    return { code: err.code, param: err.param, message: err.message };
  }
  assert.fail(`${JSON.stringify(body)} was taken`);
}

const network = (router: unknown) => ({ name: 'n', members: ['agent_a'], router });
const budget = (scope: unknown) => ({ scope, period: 'day', limit_usd: '1' });
const toolApproval = (approval: unknown) => ({
  name: 'a',
  model: 'echo',
  tools: [{ type: 'http', name: 't', description: 'd', url: 'https://example.com/t', method: 'GET', approval }],
});
const experiment = (scorer: unknown) => ({ dataset_id: 'ds_a', agent_id: 'agent_a', scorers: [scorer] });

describe('what a refused request is told', () => {
  describe('a choice of shapes told apart by one field (a router, a scope, an approval, a scorer)', () => {
    it('names what the shape its own field names lacks, not that the field should name another shape', () => {
      assert.deepEqual(refusal('createNetwork', network({ type: 'supervisor' })), {
        code: 'missing_parameter',
        param: 'router.agent_id',
        message: 'Missing required parameter `router.agent_id` or `router.instructions`.',
      });
      assert.deepEqual(refusal('createBudget', budget({ type: 'agent' })), {
        code: 'missing_parameter',
        param: 'scope.id',
        message: 'Missing required parameter `scope.id`.',
      });
      assert.deepEqual(refusal('createAgent', toolApproval({ mode: 'when' })), {
        code: 'missing_parameter',
        param: 'tools.0.approval.arguments',
        message: 'Missing required parameter `tools.0.approval.arguments`.',
      });
      assert.deepEqual(refusal('createExperiment', experiment({ name: 'string_check' })), {
        code: 'missing_parameter',
        param: 'scorers.0.operation',
        message: 'Missing required parameter `scorers.0.operation`.',
      });
    });

    it('names a field the named shape does not take', () => {
      assert.deepEqual(refusal('createNetwork', network({ type: 'sequential', agent_id: 'agent_a' })), {
        code: 'unknown_parameter',
        param: 'router.agent_id',
        message: 'Unknown parameter `router.agent_id`.',
      });
      assert.deepEqual(refusal('createAgent', toolApproval({ mode: 'always', arguments: {} })), {
        code: 'unknown_parameter',
        param: 'tools.0.approval.arguments',
        message: 'Unknown parameter `tools.0.approval.arguments`.',
      });
      assert.deepEqual(refusal('createExperiment', experiment({ name: 'completion', threshold: 0.5 })), {
        code: 'unknown_parameter',
        param: 'scorers.0.threshold',
        message: 'Unknown parameter `scorers.0.threshold`.',
      });
    });

    it("names a wrong value of the named shape's own field", () => {
      assert.deepEqual(refusal('createExperiment', experiment({ name: 'text_similarity', metric: 'bleu4' })), {
        code: 'invalid_parameter',
        param: 'scorers.0.metric',
        message: '`scorers.0.metric` must be one of: bleu, gleu, rouge_1, rouge_2, rouge_3, rouge_4, rouge_5, rouge_l.',
      });
      assert.deepEqual(refusal('createNetwork', network({ type: 'supervisor', instructions: 5 })), {
        code: 'invalid_parameter',
        param: 'router.instructions',
        message: '`router.instructions` must be string.',
      });
    });

    it('lists every value of the field when it names no shape', () => {
      assert.deepEqual(refusal('createNetwork', network({ type: 'sequentail' })), {
        code: 'invalid_parameter',
        param: 'router.type',
        message: '`router.type` must be one of: sequential, handoff, supervisor.',
      });
      assert.deepEqual(refusal('createBudget', budget({ type: 'team', id: 'x' })), {
        code: 'invalid_parameter',
        param: 'scope.type',
        message: '`scope.type` must be one of: project, api_key, agent.',
      });
      assert.deepEqual(refusal('createAgent', toolApproval({ mode: 'sometimes' })), {
        code: 'invalid_parameter',
        param: 'tools.0.approval.mode',
        message: '`tools.0.approval.mode` must be one of: never, always, when.',
      });
      const scorer = refusal('createExperiment', experiment({ name: 'exact_mtach' }));
      assert.equal(scorer.param, 'scorers.0.name');
      assert.match(scorer.message, /^`scorers\.0\.name` must be one of: completion, .*exact_match, string_check, .*judge\.$/);
    });

    it('takes each shape given as its field names it', () => {
      checkJsonBody('createNetwork', network({ type: 'supervisor', instructions: 'Pick.' }));
      checkJsonBody('createNetwork', network({ type: 'supervisor', agent_id: 'agent_a' }));
      checkJsonBody('createNetwork', network({ type: 'handoff' }));
      checkJsonBody('createBudget', budget({ type: 'project' }));
      checkJsonBody('createExperiment', experiment({ name: 'string_check', operation: 'eq' }));
    });
  });

  it('names each of the fields one of which is needed, where it named the first alone', () => {
    const run = { input: 'Hi.' };
    assert.deepEqual(refusal('createSchedule', { run, cron: '0 9 * * *' }), {
      code: 'missing_parameter',
      param: 'agent_id',
      message: 'Missing required parameter `agent_id` or `network_id`.',
    });
    assert.deepEqual(refusal('createSchedule', { run, agent_id: 'agent_a' }), {
      code: 'missing_parameter',
      param: 'cron',
      message: 'Missing required parameter `cron` or `interval_seconds`.',
    });
    assert.deepEqual(refusal('createExperiment', { dataset_id: 'ds_a' }), {
      code: 'missing_parameter',
      param: 'agent_id',
      message: 'Missing required parameter `agent_id` or `network_id`.',
    });
  });

  it("names a tool's missing or unknown `type`, where it was told the tag must be in oneOf", () => {
    const agent = (tool: unknown) => ({ name: 'a', model: 'echo', tools: [tool] });
    assert.deepEqual(refusal('createAgent', agent({ type: 'htp', name: 't' })), {
      code: 'invalid_parameter',
      param: 'tools.0.type',
      message: '`tools.0.type` must be one of: http, mcp, a2a, builtin.',
    });
    assert.deepEqual(refusal('createAgent', agent({ name: 't' })), {
      code: 'missing_parameter',
      param: 'tools.0.type',
      message: 'Missing required parameter `tools.0.type`.',
    });
    assert.deepEqual(refusal('createAgent', agent({ type: 7, name: 't' })), {
      code: 'invalid_parameter',
      param: 'tools.0.type',
      message: '`tools.0.type` must be one of: http, mcp, a2a, builtin.',
    });
  });

  it('lists the values a field may take, where Ajv says only that it must be one of them', () => {
    assert.deepEqual(refusal('createBudget', { ...budget({ type: 'project' }), period: 'week' }), {
      code: 'invalid_parameter',
      param: 'period',
      message: '`period` must be one of: day, month.',
    });
  });

  it('says which bound of a length or a count is broken in words, where Ajv wrote "must NOT have fewer than 1 characters"', () => {
    const said = (operationId: OperationId, body: unknown) => refusal(operationId, body).message;
    assert.equal(said('createThread', { subject_id: '' }), '`subject_id` must not be empty.');
    assert.equal(said('createThread', { subject_id: 'u'.repeat(300) }), '`subject_id` must be at most 256 characters long.');
    assert.equal(said('createBudget', { ...budget({ type: 'project' }), thresholds: [] }), '`thresholds` must hold at least 1 item.');
    assert.equal(
      said('createBudget', { ...budget({ type: 'project' }), thresholds: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 0.15] }),
      '`thresholds` must hold at most 10 items.',
    );
  });

  it('names the two items that are the same in a list that takes each once, where Ajv wrote "items ## 1 and 0"', () => {
    assert.deepEqual(refusal('createBudget', { ...budget({ type: 'project' }), thresholds: [0.5, 0.8, 0.5] }), {
      code: 'invalid_parameter',
      param: 'thresholds',
      message: '`thresholds` must not hold the same item twice: items 0 and 2 are the same.',
    });
  });
});
