/**
 * Experiments end to end: runs of an agent that calls an HTTP tool and an MCP tool are kept as dataset items, then
 * run again as experiments. Replayed, no request reaches either tool server; live, as many as the original runs
 * made; a call the source run never made fails its item with `replay_miss`.
 */
import assert from 'node:assert/strict';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { eventually } from '../support/eventually.js';
import { newTenant } from '../support/api.js';
import { createDb } from '../../records/db.js';
import { testLog } from '../support/services.js';
import type { ApiClient } from '../support/client.js';
import type { ScriptedReply } from '../support/model-servers/scripted-server.js';

const JUDGE = 'gpt-4.1-nano';
const JUDGE_USAGE = { input: 1000, output: 100 };
/** The answer to a question about Globex, as JSON (a string): what the memo it cites says. */
const GLOBEX_ANSWER = 'Acme acquired Globex in March.';

describe('experiments', function () {
  this.timeout(60_000);
  let stack: RunsStack;
  let tools: TestToolServer;
  let mcp: TestMcpServer;
  let agent: { id: string };
  let datasetId: string;
  let sourceRunIds: string[];
  /** What the two source runs sent: requests to the HTTP tool, and to the MCP server. */
  const original = { http: 0, mcp: 0 };

  const usage = { input: 10, output: 2 };
  const textOf = (message: { content?: unknown }) =>
    typeof message.content === 'string' ? message.content : JSON.stringify(message.content);

  /**
   * The model: asked about a city, it looks the city up (HTTP) and adds 2 and 40 (MCP), then answers 42. Told by
   * its instructions to look up Bergen, it asks for Bergen whatever the question; asked to wait, or told to take
   * its time, it never answers.
   */
  function model(body: Record<string, unknown>): ScriptedReply {
    const messages = body.messages as { role: string; content?: unknown }[];
    const question = textOf(messages.filter((m) => m.role === 'user').at(-1) ?? {});
    if (body.model === JUDGE) return judge(question);
    if (question.includes('Globex'))
      return messages.some((m) => m.role === 'tool')
        ? { text: [JSON.stringify(GLOBEX_ANSWER)], usage }
        : { tool_calls: [{ name: 'search_context', arguments: '{"query": "Globex"}' }], usage };
    const instructions = messages
      .filter((m) => m.role === 'system')
      .map(textOf)
      .join('\n');
    if (question.includes('wait') || instructions.includes('Take your time')) return { hang: true, text: ['…'] };
    if (messages.some((m) => m.role === 'tool')) return { text: ['42'], usage };
    const city = instructions.includes('Bergen') ? 'Bergen' : (/in (\w+)/.exec(question)?.[1] ?? 'Oslo');
    return {
      tool_calls: [
        { name: 'lookup', arguments: JSON.stringify({ city }) },
        { name: 'calc__add', arguments: '{"a": 2, "b": 40}' },
      ],
      usage,
    };
  }

  /** The judge: a verdict of 0.75, except for a request asked "in short", which it answers in words alone. */
  function judge(prompt: string): ScriptedReply {
    const verdict = { score: 0.75, rationale: 'Names the buyer and the month.' };
    if (prompt.includes('in short')) return { text: ['It is fine.'], usage: JUDGE_USAGE };
    return { tool_calls: [{ name: 'record_verdict', arguments: JSON.stringify(verdict) }], usage: JUDGE_USAGE };
  }

  const sent = () => ({ http: tools.received.length, mcp: mcp.methods.length });

  /** A dataset of `items`, made through the datasets API. */
  async function datasetWith(items: Record<string, unknown>[], client: ApiClient = stack.tenant.admin): Promise<string> {
    const dataset = await client.post('/v1/datasets', { name: 'weather' });
    assert.equal(dataset.status, 201, JSON.stringify(dataset.body));
    const added = await client.post(`/v1/datasets/${dataset.body.id}/items`, { items });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    return dataset.body.id;
  }

  /** A dataset of the runs (each item a copy of its run, with its tool calls), each expecting 42. */
  const datasetOf = (runIds: string[]) => datasetWith(runIds.map((runId) => ({ from_run_id: runId, expected: '42' })));

  async function experimentEnded(id: string, client: ApiClient = stack.tenant.admin): Promise<any> {
    return eventually(
      async () => {
        const got = await client.get(`/v1/experiments/${id}`);
        assert.ok(['completed', 'failed', 'cancelled'].includes(got.body.status), `the experiment is ${got.body.status}`);
        return got.body;
      },
      { timeoutMs: 30_000, message: 'the experiment did not end' },
    );
  }

  const itemsOf = async (id: string, client: ApiClient = stack.tenant.admin): Promise<any[]> =>
    (await client.get(`/v1/experiments/${id}/items`)).body.data;

  before(async () => {
    stack = await startRunsStack('experiments');
    tools = await startToolServer();
    mcp = await startMcpServer();
    stack.openai.setFallback(model);
    agent = await createAgent(stack.tenant.admin, {
      tools: [
        { type: 'http', name: 'lookup', url: `${tools.url}/echo`, method: 'POST' },
        { type: 'mcp', server_label: 'calc', server_url: mcp.url },
      ],
    });
    const before = sent();
    const runIds: string[] = [];
    for (const input of ['Weather in Oslo?', 'Weather in Rome?']) {
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input });
      const ended = await runSatisfying(
        stack.tenant.admin,
        run.body.id,
        (r) => r.status === 'completed',
        'the source run did not complete',
      );
      assert.equal(ended.output.text, '42');
      runIds.push(run.body.id);
    }
    original.http = sent().http - before.http;
    original.mcp = sent().mcp - before.mcp;
    assert.equal(original.http, 2, 'each source run called the HTTP tool once');
    assert.ok(original.mcp >= 2, 'each source run asked the MCP server');
    sourceRunIds = runIds;
    datasetId = await datasetOf(runIds);
  });

  after(async () => {
    await stack?.stop();
    await tools?.close();
    await mcp?.close();
  });

  it('replays every tool call from the dataset: no request reaches either server, and each item is scored', async () => {
    const before = sent();
    const created = await stack.tenant.admin.post('/v1/experiments', { name: 'replayed', dataset_id: datasetId, agent_id: agent.id });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.tools, 'replay');
    assert.deepEqual(created.body.scorers, [{ name: 'completion' }, { name: 'exact_match', case_sensitive: true, trim: true }]);
    assert.equal(created.body.item_counts.total, 2);
    const ended = await experimentEnded(created.body.id);
    assert.equal(ended.status, 'completed');
    assert.deepEqual(sent(), before, 'nothing was sent to the HTTP tool or the MCP server');
    assert.deepEqual(ended.item_counts, { total: 2, queued: 0, running: 0, completed: 2, failed: 0, cancelled: 0 });
    assert.deepEqual(ended.summary.scores, { completion: { mean: 1, count: 2 }, exact_match: { mean: 1, count: 2 } });
    assert.match(ended.summary.cost_usd, /^\d+(\.\d+)?$/);
    assert.ok(ended.summary.latency_ms.p95 >= ended.summary.latency_ms.p50);

    const items = await itemsOf(created.body.id);
    assert.deepEqual(
      items.map((item) => [item.status, item.output, item.error]),
      [
        ['completed', '42', null],
        ['completed', '42', null],
      ],
    );
    const run = (await stack.tenant.admin.get(`/v1/runs/${items[0].run_id}`)).body;
    assert.equal(run.experiment_id, created.body.id);
    const toolSteps = run.steps.filter((step: any) => step.type === 'tool_call');
    assert.deepEqual(
      toolSteps.map((step: any) => [step.tool_call.name, step.status, step.replayed]),
      [
        ['lookup', 'completed', true],
        ['calc__add', 'completed', true],
      ],
    );
    assert.equal(toolSteps[1].output, '42', "the MCP tool's recorded answer");
  });

  it('calls the tools in live mode, as often as the source runs did', async () => {
    const before = sent();
    const created = await stack.tenant.admin.post('/v1/experiments', {
      dataset_id: datasetId,
      agent_id: agent.id,
      tools: 'live',
      concurrency: 1,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const ended = await experimentEnded(created.body.id);
    assert.equal(ended.status, 'completed');
    assert.deepEqual(sent(), { http: before.http + original.http, mcp: before.mcp + original.mcp });
    const run = (await stack.tenant.admin.get(`/v1/runs/${(await itemsOf(created.body.id))[0].run_id}`)).body;
    assert.ok(run.steps.every((step: any) => step.replayed === undefined));
  });

  it('fails an item whose run makes a call the source run never made, with replay_miss naming the call, and sends nothing', async () => {
    const before = sent();
    const created = await stack.tenant.admin.post('/v1/experiments', {
      dataset_id: datasetId,
      agent_id: agent.id,
      overrides: { instructions: 'Always look up Bergen.' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.overrides, { instructions: 'Always look up Bergen.' });
    const ended = await experimentEnded(created.body.id);
    assert.equal(ended.status, 'completed', 'the experiment ran all its items');
    assert.equal(ended.item_counts.failed, 2);
    assert.deepEqual(ended.summary.scores.completion, { mean: 0, count: 2 });
    assert.deepEqual(sent(), before, 'the missed call was not sent either');
    const [item] = await itemsOf(created.body.id);
    assert.equal(item.status, 'failed');
    assert.equal(item.error.code, 'replay_miss');
    assert.match(item.error.message, /lookup with arguments \{"city":"Bergen"\}/);
    const run = (await stack.tenant.admin.get(`/v1/runs/${item.run_id}`)).body;
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'replay_miss');
    // The agent itself is unchanged: the override was the experiment's runs' alone.
    assert.equal((await stack.tenant.admin.get(`/v1/agents/${agent.id}`)).body.instructions, 'Answer briefly.');
  });

  it('replays a network run: its hop answers from the recorded calls, with nothing sent', async () => {
    const network = await stack.tenant.admin.post('/v1/networks', { name: 'desk', members: [agent.id], router: { type: 'sequential' } });
    assert.equal(network.status, 201, JSON.stringify(network.body));
    const run = await stack.tenant.admin.post(`/v1/networks/${network.body.id}/run`, { input: 'Weather in Lima?' });
    await runSatisfying(stack.tenant.admin, run.body.id, (r) => r.status === 'completed', 'the network run did not complete');
    const dataset = await datasetOf([run.body.id]);
    const before = sent();
    const created = await stack.tenant.admin.post('/v1/experiments', { dataset_id: dataset, network_id: network.body.id });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const ended = await experimentEnded(created.body.id);
    assert.equal(ended.status, 'completed');
    assert.equal(ended.item_counts.completed, 1, JSON.stringify(await itemsOf(created.body.id)));
    assert.deepEqual(sent(), before);
    const hops = (await stack.tenant.admin.get(`/v1/runs/${(await itemsOf(created.body.id))[0].run_id}`)).body.hops;
    const hop = (await stack.tenant.admin.get(`/v1/runs/${hops[0].child_run_id}`)).body;
    assert.equal(hop.experiment_id, created.body.id);
    assert.ok(hop.steps.some((step: any) => step.replayed === true));
  });

  it('scores items by fuzzy_match, json_schema, faithfulness, a judge, string_check and text_similarity, and records the judge calls as usage', async () => {
    // A project of its own: its context file offers search_context to its agents alone.
    const tenant = await newTenant(stack.api, 'experiments-scorers');
    const memo = await tenant.admin.upload({
      purpose: 'context',
      file: {
        data: Buffer.from('Acme Corporation acquired Globex in March for twelve million dollars.'),
        filename: 'memo.txt',
        type: 'text/plain',
      },
    });
    await tenant.admin.settledFile(memo.body.id);
    const reader = await createAgent(tenant.admin);
    const dataset = await datasetWith(
      [
        { input: 'Who acquired Globex?', expected: GLOBEX_ANSWER },
        { input: 'Who acquired Globex, in short?', expected: GLOBEX_ANSWER },
      ],
      tenant.admin,
    );
    const created = await tenant.admin.post('/v1/experiments', {
      dataset_id: dataset,
      agent_id: reader.id,
      tools: 'live',
      scorers: [
        'fuzzy_match',
        { name: 'json_schema', schema: { type: 'string' } },
        'faithfulness',
        { name: 'judge', rubric: 'Names the buyer and the month.', model: JUDGE },
        { name: 'string_check', operation: 'like' },
        { name: 'text_similarity', metric: 'rouge_l', threshold: 0.8 },
      ],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.scorers, [
      { name: 'fuzzy_match' },
      { name: 'json_schema', schema: { type: 'string' } },
      { name: 'faithfulness' },
      { name: 'judge', rubric: 'Names the buyer and the month.', model: JUDGE },
      { name: 'string_check', operation: 'like' },
      { name: 'text_similarity', metric: 'rouge_l', threshold: 0.8 },
    ]);
    const ended = await experimentEnded(created.body.id, tenant.admin);
    assert.equal(ended.status, 'completed');
    // The answer is the expected one in quotes (a JSON string): 2 edits in 32 characters.
    assert.deepEqual(ended.summary.scores, {
      fuzzy_match: { mean: 0.9375, count: 2 },
      json_schema: { mean: 1, count: 2 },
      faithfulness: { mean: 1, count: 2 },
      judge: { mean: 0.75, count: 1 },
      string_check: { mean: 1, count: 2 },
      text_similarity: { mean: 0.8571, count: 2 },
    });
    const [judged, unjudged] = await itemsOf(created.body.id, tenant.admin);
    assert.deepEqual(
      judged.scores.map((score: any) => [score.scorer, score.value]),
      [
        ['fuzzy_match', 0.9375],
        ['json_schema', 1],
        ['faithfulness', 1],
        ['judge', 0.75],
        ['string_check', 1],
        ['text_similarity', 0.8571],
      ],
    );
    assert.equal(judged.scores[2].explanation, '1 of 1 claim(s) of the answer are supported by the passages it cited.');
    assert.equal(judged.scores[3].explanation, 'Names the buyer and the month.');
    // The quoted answer contains the expected one; its words are the expected six and two quote marks.
    assert.equal(
      judged.scores[5].explanation,
      "The answer's rouge_l against the expected one is 0.8571 (words, ignoring case). It passes (threshold 0.8).",
    );
    assert.equal(judged.error, null);
    // A judge that gives no verdict leaves its score out; the item keeps the others, and says why.
    assert.equal(unjudged.status, 'completed');
    assert.deepEqual(
      unjudged.scores.map((score: any) => score.scorer),
      ['fuzzy_match', 'json_schema', 'faithfulness', 'string_check', 'text_similarity'],
    );
    assert.equal(unjudged.error.code, 'judge_failed');
    assert.match(unjudged.error.message, /did not call record_verdict/);
    const asked = stack.openai.requests.filter((request) => request.model === JUDGE);
    assert.equal(asked.length, 2);
    assert.match(JSON.stringify(asked[0]), /Names the buyer and the month/, "the rubric is the judge's");
    const usage = await stack.api.services.db.query<{ source: string; model: string; cost: string }>(
      `SELECT source, model, cost::text FROM usage_records WHERE run_id = ANY($1) AND source = 'judge'`,
      [[judged.run_id, unjudged.run_id]],
    );
    assert.deepEqual(usage.rows, [
      { source: 'judge', model: JUDGE, cost: '0.00014' },
      { source: 'judge', model: JUDGE, cost: '0.00014' },
    ]);
  });

  it('cancels an experiment: its running run is cancelled, its items with it', async () => {
    const dataset = await datasetWith([{ input: 'Please wait.' }, { input: 'Please wait again.' }]);
    const created = await stack.tenant.admin.post('/v1/experiments', { dataset_id: dataset, agent_id: agent.id, concurrency: 1 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.scorers, [{ name: 'completion' }], 'no item expects an answer');
    const running = await eventually(
      async () => {
        const [item] = await itemsOf(created.body.id);
        assert.equal(item.status, 'running');
        return item;
      },
      { message: 'the first item did not start' },
    );
    const cancelled = await stack.tenant.admin.post(`/v1/experiments/${created.body.id}/cancel`, {});
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.status, 'cancelled');
    await runSatisfying(stack.tenant.admin, running.run_id, (r) => r.status === 'cancelled', 'the run was not cancelled');
    await eventually(
      async () =>
        assert.deepEqual(
          (await itemsOf(created.body.id)).map((item) => [item.status, item.run_id === null]),
          [
            ['cancelled', false],
            ['cancelled', true],
          ],
        ),
      { message: 'the items were not cancelled' },
    );
    const again = await stack.tenant.admin.post(`/v1/experiments/${created.body.id}/cancel`, {});
    assert.equal(again.body.status, 'cancelled', 'an ended experiment is answered as it is');
  });

  it("clears the items copied from a forgotten subject's run or a deleted thread's, and their runs; scores and cost stay", async () => {
    const admin = stack.tenant.admin;
    const thread = await admin.post('/v1/threads', {});
    const ran = async (input: string, on: Record<string, string>) => {
      const run = await admin.post(`/v1/agents/${agent.id}/run`, { input, ...on });
      assert.equal(run.status, 200, JSON.stringify(run.body));
      return runSatisfying(admin, run.body.id, (r) => r.status === 'completed', 'the source run did not complete');
    };
    const subjectRun = await ran('Weather in Oslo? Quintessa Marlowe asks.', { subject_id: 'customer-quintessa' });
    const threadRun = await ran('Weather in Rome? Bartholomew Quill asks.', { thread_id: thread.body.id });
    const dataset = await datasetWith([
      { from_run_id: subjectRun.id, expected: '42, Quintessa Marlowe' },
      { from_run_id: threadRun.id, expected: '42, Bartholomew Quill' },
    ]);
    const created = await admin.post('/v1/experiments', { dataset_id: dataset, agent_id: agent.id });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const ended = await experimentEnded(created.body.id);
    assert.equal(ended.status, 'completed');
    const shown = async () => {
      const items = await itemsOf(created.body.id);
      const runs = await Promise.all(items.map(async (item) => JSON.stringify((await admin.get(`/v1/runs/${item.run_id}`)).body)));
      return { items, text: items.map((item, n) => JSON.stringify(item) + runs[n]) };
    };
    const before = await shown();
    assert.match(before.text[0]!, /Quintessa Marlowe/, "the item's run and the scores' explanations hold the subject's words");
    assert.match(before.text[1]!, /Bartholomew Quill/);
    const kept = (item: any) => [item.status, item.scores.map((s: any) => [s.scorer, s.value]), item.cost_usd, item.latency_ms];

    const forgotten = await admin.delete('/v1/memories?subject_id=customer-quintessa');
    assert.equal(forgotten.status, 200, JSON.stringify(forgotten.body));
    assert.equal(forgotten.body.removed.experiment_items_cleared, 1);
    const afterForget = await shown();
    assert.doesNotMatch(afterForget.text[0]!, /Quintessa|Marlowe/);
    assert.equal(afterForget.items[0].payload_expired, true);
    assert.equal(afterForget.items[0].output, '');
    assert.deepEqual(kept(afterForget.items[0]), kept(before.items[0]));
    assert.match(afterForget.text[1]!, /Bartholomew Quill/, "another subject's item is kept whole");
    assert.equal(afterForget.items[1].payload_expired, undefined);

    const deleted = await admin.delete(`/v1/threads/${thread.body.id}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.equal(deleted.body.experiment_items_cleared, 1);
    const afterDelete = await shown();
    assert.doesNotMatch(afterDelete.text[1]!, /Bartholomew|Quill/);
    assert.deepEqual(afterDelete.items.map(kept), before.items.map(kept));
    const run = (await admin.get(`/v1/runs/${afterDelete.items[1].run_id}`)).body;
    assert.deepEqual(run.input, []);
    assert.ok(
      run.steps.every((step: any) => step.payload_expired),
      "the run's steps are cleared",
    );
    assert.deepEqual((await admin.get(`/v1/experiments/${created.body.id}`)).body.summary, ended.summary, 'the summary stays');
  });

  it("answers 409 to forgetting a subject while an experiment's run copied from its run is going, and clears it once it has ended", async () => {
    const admin = stack.tenant.admin;
    const source = await admin.post(`/v1/agents/${agent.id}/run`, {
      input: 'Weather in Oslo? Ottoline Vance asks.',
      subject_id: 'customer-ottoline',
    });
    await runSatisfying(admin, source.body.id, (r) => r.status === 'completed', 'the source run did not complete');
    const dataset = await datasetWith([{ from_run_id: source.body.id }]);
    const created = await admin.post('/v1/experiments', {
      dataset_id: dataset,
      agent_id: agent.id,
      overrides: { instructions: 'Take your time.' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const running = await eventually(
      async () => {
        const [item] = await itemsOf(created.body.id);
        assert.equal(item.status, 'running');
        return item;
      },
      { message: 'the item did not start' },
    );
    const busy = await admin.delete('/v1/memories?subject_id=customer-ottoline');
    assert.equal(busy.status, 409, JSON.stringify(busy.body));
    assert.equal(busy.body.error.code, 'subject_busy');
    assert.match(busy.body.error.message, new RegExp(`experiment's run .*\\(${running.run_id}\\)`));
    assert.equal((await admin.post(`/v1/experiments/${created.body.id}/cancel`, {})).status, 200);
    await runSatisfying(admin, running.run_id, (r) => r.status === 'cancelled', 'the run was not cancelled');
    // The item ends once its run's end is recorded on it: until then its scores could still be written.
    await eventually(async () => assert.equal((await itemsOf(created.body.id))[0].status, 'cancelled'), {
      message: 'the item did not end cancelled',
    });
    const forgotten = await admin.delete('/v1/memories?subject_id=customer-ottoline');
    assert.equal(forgotten.status, 200, JSON.stringify(forgotten.body));
    assert.equal(forgotten.body.removed.experiment_items_cleared, 1);
    assert.doesNotMatch(JSON.stringify((await admin.get(`/v1/runs/${running.run_id}`)).body), /Ottoline/);
  });

  it('lists experiments by dataset, newest first, and pages their items', async () => {
    const list = await stack.tenant.admin.get(`/v1/experiments?dataset_id=${datasetId}&limit=2`);
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 2);
    assert.equal(list.body.has_more, true);
    assert.ok(list.body.data.every((experiment: any) => experiment.dataset_id === datasetId));
    const [newest] = list.body.data;
    const page = await stack.tenant.admin.get(`/v1/experiments/${newest.id}/items?limit=1`);
    assert.equal(page.body.data.length, 1);
    assert.equal(page.body.has_more, true);
    const next = await stack.tenant.admin.get(`/v1/experiments/${newest.id}/items?limit=1&after=${page.body.last_id}`);
    assert.equal(next.body.has_more, false);
    assert.notEqual(next.body.data[0].id, page.body.data[0].id);
  });

  it('answers 400 for a request that names no target, both, overrides on a network, or scorers a dataset would refuse', async () => {
    const admin = stack.tenant.admin;
    const refused = async (body: Record<string, unknown>, code: string, message?: string) => {
      const answer = await admin.post('/v1/experiments', { dataset_id: datasetId, ...body });
      assert.equal(answer.status, 400, JSON.stringify(answer.body));
      assert.equal(answer.body.error.code, code, JSON.stringify(answer.body));
      if (message !== undefined) assert.equal(answer.body.error.message, message);
    };
    await refused({}, 'missing_parameter');
    // Said in the document's words, where the body itself was quoted back as what may not be.
    await refused(
      { agent_id: agent.id, network_id: 'net_x' },
      'invalid_parameter',
      'The body is not valid: Give `agent_id` or `network_id`, not both.',
    );
    await refused({ agent_id: agent.id, scorers: ['astrology'] }, 'invalid_parameter');
    // Checked as a dataset's scorers are.
    await refused({ agent_id: agent.id, scorers: ['completion', { name: 'completion' }] }, 'duplicate_scorer');
    await refused({ agent_id: agent.id, scorers: [{ name: 'judge', rubric: 'Kind?', model: 'no-such-model' }] }, 'model_not_found');
    await refused({ agent_id: agent.id, scorers: [{ name: 'json_schema', schema: { type: 'strung' } }] }, 'invalid_scorer');
    await refused({ agent_id: agent.id, concurrency: 0 }, 'invalid_parameter');
    const network = await admin.post('/v1/networks', { name: 'n', members: [agent.id], router: { type: 'sequential' } });
    // It was told that `agent_id` was missing.
    await refused(
      { network_id: network.body.id, overrides: { model: 'gpt-4.1-mini' } },
      'invalid_parameter',
      'The body is not valid: `overrides` change what an agent runs with; a network experiment takes none.',
    );
  });

  it("answers 404 for an unknown experiment, agent, version or dataset, and for another project's dataset", async () => {
    const admin = stack.tenant.admin;
    assert.equal((await admin.get('/v1/experiments/exp_missing')).status, 404);
    assert.equal((await admin.get('/v1/experiments/exp_missing/items')).status, 404);
    assert.equal((await admin.post('/v1/experiments/exp_missing/cancel', {})).status, 404);
    assert.equal((await admin.post('/v1/experiments', { dataset_id: 'ds_missing', agent_id: agent.id })).status, 404);
    assert.equal((await admin.post('/v1/experiments', { dataset_id: datasetId, agent_id: 'agent_missing' })).status, 404);
    const noVersion = await admin.post('/v1/experiments', { dataset_id: datasetId, agent_id: agent.id, version: 99 });
    assert.equal(noVersion.status, 404);
    assert.deepEqual(noVersion.body.error, {
      type: 'not_found_error',
      code: 'resource_not_found',
      message: `Agent ${agent.id} has no version 99; its latest is ${(await admin.get(`/v1/agents/${agent.id}`)).body.version}.`,
      param: 'version',
    });
    const other = await newTenant(stack.api, 'experiments-other');
    const otherAgent = await createAgent(other.admin);
    const theirs = await other.admin.post('/v1/experiments', { dataset_id: datasetId, agent_id: otherAgent.id });
    assert.equal(theirs.status, 404, JSON.stringify(theirs.body));
    assert.equal((await other.admin.get(`/v1/experiments?dataset_id=${datasetId}`)).body.data.length, 0);
  });

  for (const [emptied, status, code] of [
    ['whose dataset is deleted', 404, 'resource_not_found'],
    ['whose items are all deleted', 409, 'dataset_empty'],
  ] as const) {
    it(`answers ${status} to an experiment ${emptied} while it is being created, where it ran none of them`, async () => {
      const admin = stack.tenant.admin;
      const doomed = await datasetOf(sourceRunIds);
      const items = (await admin.get(`/v1/datasets/${doomed}/items`)).body.data as { id: string }[];
      const locker = createDb(stack.api.services.db.connectionString, { max: 1, log: testLog });
      const holding = await locker.connect();
      try {
        // The source runs held, as a thread's deletion holds them: the creation, its items read, waits for them.
        await holding.query('BEGIN');
        await holding.query('SELECT 1 FROM runs WHERE id = ANY($1) FOR UPDATE', [sourceRunIds]);
        const creating = admin.post('/v1/experiments', { dataset_id: doomed, agent_id: agent.id });
        await eventually(async () => {
          const { rows } = await stack.api.services.db.query(
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR SHARE%'",
          );
          assert.ok(rows.length > 0, 'the creation does not wait for the source runs');
        });
        const deletions = status === 404 ? [`/v1/datasets/${doomed}`] : items.map((item) => `/v1/datasets/${doomed}/items/${item.id}`);
        for (const path of deletions) assert.equal((await admin.delete(path)).status, 200, path);
        await holding.query('COMMIT');
        const created = await creating;
        assert.equal(created.status, status, JSON.stringify(created.body));
        assert.deepEqual([created.body.error.code, created.body.error.param], [code, 'dataset_id']);
        assert.deepEqual((await admin.get(`/v1/experiments?dataset_id=${doomed}`)).body.data, []);
      } finally {
        await holding.query('ROLLBACK').catch(() => undefined);
        holding.release();
        await locker.end();
      }
    });
  }

  it('needs experiments:write and agents:run to create, experiments:read to read', async () => {
    const writer = await stack.tenant.keyWith('experiments:write');
    const refused = await writer.post('/v1/experiments', { dataset_id: datasetId, agent_id: agent.id });
    assert.equal(refused.status, 403);
    const reader = await stack.tenant.keyWith('agents:read');
    assert.equal((await reader.get('/v1/experiments')).status, 403);
    assert.equal((await (await stack.tenant.keyWith('experiments:read')).get('/v1/experiments')).status, 200);
  });
});
