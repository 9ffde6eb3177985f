import assert from 'node:assert/strict';
import {
  fieldsOf,
  itemFieldsOf,
  itemSchemaCheck,
  mapCriteria,
  render,
  templateOf,
  type Criterion,
  type ItemCheck,
} from '../../api/routes/datasets/openai-evals.js';
import { MAX_PARAMETERS_BYTES, MAX_PARAMETERS_DEPTH } from '../../tools/argument-schemas.js';

// Testing criteria as the OpenAI Evals API returns them (GET /v1/evals/{id}).
const criteria: Criterion[] = [
  { type: 'string_check', name: 'Exact answer', input: '{{sample.output_text}}', reference: '{{item.answer}}', operation: 'eq' },
  { type: 'string_check', name: 'Mentions the answer', input: '{{sample.output_text}}', reference: '{{item.answer}}', operation: 'ilike' },
  {
    type: 'text_similarity',
    name: 'Close enough',
    input: '{{sample.output_text}}',
    reference: '{{item.answer}}',
    evaluation_metric: 'fuzzy_match',
    pass_threshold: 0.85,
  },
  {
    type: 'text_similarity',
    name: 'BLEU',
    input: '{{sample.output_text}}',
    reference: '{{item.answer}}',
    evaluation_metric: 'bleu',
    pass_threshold: 0.5,
  },
  {
    type: 'label_model',
    name: 'Tone',
    model: 'gpt-4o-2024-08-06',
    input: [
      { role: 'developer', content: 'Label the tone of the reply as friendly, neutral or rude.' },
      { role: 'user', content: { type: 'input_text', text: 'Reply: {{sample.output_text}}' } },
    ],
    labels: ['friendly', 'neutral', 'rude'],
    passing_labels: ['friendly', 'neutral'],
  },
  {
    type: 'score_model',
    name: 'Helpfulness',
    model: 'o3-mini',
    input: [{ role: 'user', content: 'Rate {{sample.output_text}}' }],
    range: [1, 7],
  },
  { type: 'python', name: 'Custom', source: 'def grade(sample, item):\n    return 1.0' },
  { type: 'string_check', name: 'Category', input: '{{item.category}}', reference: 'billing', operation: 'eq' },
];

describe('reading an OpenAI Evals export', () => {
  it('maps eq to exact_match, fuzzy text similarity to fuzzy_match, the first model grader to a judge, and lists the rest with why', () => {
    const mapping = mapCriteria(criteria);
    assert.equal(mapping.expected, '{{item.answer}}');
    assert.deepEqual(mapping.mapped, [
      { criterion: 'Exact answer', type: 'string_check', scorer: 'exact_match' },
      { criterion: 'Close enough', type: 'text_similarity', scorer: 'fuzzy_match' },
      { criterion: 'Tone', type: 'label_model', scorer: 'judge' },
    ]);
    assert.deepEqual(mapping.scorers.slice(0, 2), [
      { name: 'exact_match', case_sensitive: true, trim: false },
      { name: 'fuzzy_match', threshold: 0.85 },
    ]);
    const judge = mapping.scorers[2] as { name: 'judge'; rubric: string };
    assert.match(
      judge.rubric,
      /developer: Label the tone of the reply as friendly, neutral or rude\.\nuser: Reply: \{\{sample\.output_text\}\}/,
    );
    assert.match(
      judge.rubric,
      /Choose one label of: friendly, neutral, rude\. Score 1 when .* passing labels \(friendly, neutral\), else 0\./,
    );
    assert.deepEqual(
      mapping.unmapped.map((u) => [u.criterion, u.reason]),
      [
        ['Mentions the answer', '`ilike` checks that the answer contains the reference; no scorer here checks containment'],
        ['BLEU', 'the metric "bleu" has no scorer here (fuzzy_match has: edit-distance similarity)'],
        ['Helpfulness', 'a dataset names each scorer once, and an earlier criterion is already its judge'],
        ['Custom', 'it runs Python code, which the platform does not run'],
        ['Category', 'it does not grade the answer ({{sample.output_text}}) but other text, which a dataset scorer cannot read'],
      ],
    );
  });

  it('turns a score model grader into a rubric that scales its range to [0, 1]', () => {
    const [criterion] = criteria.filter((c) => c.type === 'score_model');
    const mapping = mapCriteria([{ ...criterion!, pass_threshold: 5 }]);
    assert.match(
      (mapping.scorers[0] as { rubric: string }).rubric,
      /Grade from 1 to 7, then give the score as \(grade - 1\) \/ \(7 - 1\), from 0 to 1\. A grade of 5 or more passes\./,
    );
  });

  it('fills templates from an item: a lone placeholder keeps its value, text around it makes text, a missing field is named', () => {
    const item = { question: 'What is 6 x 7?', answer: 42, ctx: { source: 'tables' } };
    assert.deepEqual(render('{{item.answer}}', item), { value: 42 });
    assert.deepEqual(render('{{ item.question }} (from {{item.ctx.source}})', item), { value: 'What is 6 x 7? (from tables)' });
    assert.deepEqual(render('{{item.hint}}', item), { missing: 'item.hint' });
    assert.equal(templateOf('question'), '{{item.question}}');
    assert.deepEqual(fieldsOf('Q: {{item.question}} A: {{item.answer.text}}'), ['question', 'answer']);
  });

  it('reads an exported line as {"item": {...}} or the fields alone', () => {
    assert.deepEqual(itemFieldsOf({ item: { q: 1 }, sample: { output_text: 'x' } }), { q: 1 });
    assert.deepEqual(itemFieldsOf({ q: 1 }), { q: 1 });
    assert.equal(itemFieldsOf({ item: 'text' }), null);
    assert.equal(itemFieldsOf([1]), null);
  });

  describe("the export's item_schema", () => {
    const itemSchema = {
      type: 'object',
      properties: { question: { type: 'string' }, answer: { type: 'string' }, order: { type: 'string', pattern: '^[0-9]{4}$' } },
      required: ['question', 'answer'],
    };
    const checkOf = (schema: unknown): ItemCheck => {
      const outcome = itemSchemaCheck({ type: 'custom', item_schema: schema });
      assert.ok(outcome && 'check' in outcome, JSON.stringify(outcome));
      return outcome.check;
    };
    const problemOf = (schema: unknown): string => {
      const outcome = itemSchemaCheck({ type: 'custom', item_schema: schema });
      assert.ok(outcome && 'problem' in outcome, 'the schema is refused');
      return outcome.problem;
    };

    it('checks nothing when the export has no item_schema', () => {
      assert.equal(itemSchemaCheck(undefined), null);
      assert.equal(itemSchemaCheck({ type: 'stored_completions' }), null);
    });

    it('passes an item that matches, and says what is wrong with one that does not, naming the item', () => {
      const check = checkOf(itemSchema);
      assert.equal(check({ question: 'When does 1234 ship?', answer: 'Tomorrow.', order: '1234' }), null);
      assert.equal(check({ question: 'When?', answer: 7 }), 'item/answer must be string');
      assert.equal(check({ question: 'When?' }), "item must have required property 'answer'");
      assert.equal(check({ question: 'When?', answer: 'Now.', order: '12a4' }), 'item/order must match pattern "^[0-9]{4}$"');
    });

    it('refuses a schema that is not an object, too large, too deep, of another draft, or with a pattern not matched in linear time', () => {
      assert.equal(problemOf('object'), 'is not a JSON Schema object');
      assert.match(problemOf({ type: 'object', description: 'x'.repeat(MAX_PARAMETERS_BYTES) }), /more than the 65536 allowed/);
      let deep: Record<string, unknown> = { type: 'string' };
      for (let level = 0; level < MAX_PARAMETERS_DEPTH; level++) deep = { type: 'object', properties: { next: deep } };
      assert.match(problemOf(deep), /deeper than 32 levels/);
      assert.match(problemOf({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }), /only JSON Schema 2020-12/);
      assert.match(problemOf({ type: 'object', properties: { a: { type: 'string', pattern: '^(a+)\\1$' } } }), /is not supported/);
      assert.match(problemOf({ type: 'objekt' }), /is not a usable JSON Schema/);
    });
  });
});
