import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { assertAccessible, openConsole, screenshot, signIn, visit, type ConsoleSession } from '../support/browser.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { eventually } from '../support/eventually.js';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';
import { addSteps } from '../support/run-steps.js';
import { addItems, createDataset } from '../../records/datasets.js';

const MANY_STEPS = 2_000;

describe('console: runs', function () {
  this.timeout(180_000);
  let stack: RunsStack;
  let tools: TestToolServer;
  let session: ConsoleSession;
  let page: Page;
  let toolRun: any;
  let networkRun: any;
  let bigRun: any;
  let hanging: any;

  before(async () => {
    stack = await startRunsStack('console-runs');
    tools = await startToolServer();
    const admin = stack.tenant.admin;
    const forecaster = await createAgent(admin, {
      name: 'forecaster',
      tools: [
        {
          type: 'http',
          name: 'weather',
          url: `${tools.url}/echo`,
          method: 'POST',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    });
    stack.openai.enqueue({ tool_calls: [{ name: 'weather', arguments: '{"city":"Oslo"}' }], usage: { input: 5000, output: 100 } });
    stack.openai.enqueue({ text: ['It is sunny ', 'in Oslo.'], usage: { input: 800, output: 80 } });
    toolRun = (await admin.post(`/v1/agents/${forecaster.id}/run`, { input: 'Weather in Oslo?' })).body;
    assert.equal(toolRun.status, 'completed', JSON.stringify(toolRun.error));

    const drafter = await createAgent(admin, { name: 'drafter' });
    const editor = await createAgent(admin, { name: 'editor' });
    const net = (await admin.post('/v1/networks', { name: 'desk', members: [drafter.id, editor.id], router: { type: 'sequential' } })).body;
    stack.openai.enqueue({ text: ['A draft about otters.'], usage: { input: 1000, output: 100 } });
    stack.openai.enqueue({ text: ['An edited piece about otters.'], usage: { input: 3000, output: 300 } });
    networkRun = (await admin.post(`/v1/networks/${net.id}/run`, { input: 'Write about otters.' })).body;
    assert.equal(networkRun.status, 'completed', JSON.stringify(networkRun.error));

    stack.openai.enqueue({ text: ['Begun.'], usage: { input: 10, output: 2 } });
    bigRun = (await admin.post(`/v1/agents/${drafter.id}/run`, { input: 'A long one.' })).body;
    await addSteps(stack.api.services.db, bigRun.id, MANY_STEPS);

    stack.openai.enqueue({ text: ['Thinking it over'], hang: true });
    hanging = (await admin.post(`/v1/agents/${drafter.id}/run`, { input: 'Think forever.', wait: false })).body;
    await runSatisfying(admin, hanging.id, (run) => run.status === 'in_progress', 'the run did not start');

    session = await openConsole(stack.api.url);
    page = session.page;
    await signIn(page, stack.tenant.admin.key!);
  });

  after(async () => {
    await session?.close();
    await tools?.close();
    await stack?.stop();
  });

  it('lists the runs with their status, agent and cost, filters them by status and agent in the URL, and opens one', async () => {
    await page.getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    const table = page.getByRole('table');
    const run = (id: string) => table.getByRole('rowheader', { name: id });
    for (const id of [toolRun.id, networkRun.id, bigRun.id, hanging.id]) await run(id).waitFor();
    // A network run's hops are runs too, each named as a hop of its network run.
    const hop = table.getByRole('row').filter({ has: page.getByRole('rowheader', { name: networkRun.hops[0].child_run_id }) });
    await hop.getByText('hop of').getByRole('link', { name: networkRun.id }).waitFor();
    await assertAccessible(page, 'the run list');
    await screenshot(page, 'runs-list');

    await page.getByLabel('Status').selectOption('in_progress');
    await eventually(() => assert.match(page.url(), /status=in_progress/));
    await run(hanging.id).waitFor();
    await run(toolRun.id).waitFor({ state: 'detached' });
    assert.equal(await table.locator('tbody tr').count(), 1);

    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Agent').selectOption({ label: `forecaster (${toolRun.agent_id})` });
    await eventually(() => assert.match(page.url(), new RegExp(`agent_id=${toolRun.agent_id}`)));
    await run(hanging.id).waitFor({ state: 'detached' });
    assert.equal(await table.locator('tbody tr').count(), 1);

    await run(toolRun.id).getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: `Run ${toolRun.id}` }).waitFor();
  });

  it("shows a completed run's steps with their tokens, cost and share of the total, and a step in full", async () => {
    await visit(session, `/runs/${toolRun.id}`);
    const steps = page.getByRole('table', { name: /Steps/ });
    await steps.getByRole('link', { name: /Step 0 model call/ }).waitFor();
    await steps.getByRole('link', { name: /Step 1 tool call · weather/ }).waitFor();
    await steps.getByRole('link', { name: /Step 2 model call/ }).waitFor();
    // gpt-4.1-mini ($0.40 in, $1.60 out per million): 5,000 in and 100 out cost $0.00216 of the run's
    // $0.002608 (the second call: 800 in, 80 out, $0.000448): 82.8%.
    assert.equal(toolRun.cost, '0.002608');
    const first = steps.getByRole('row').filter({ has: page.getByRole('link', { name: /Step 0 / }) });
    await first.getByText('5,100').waitFor();
    await first.getByText('$0.00216').waitFor();
    await first.getByText('82.8%').waitFor();
    await page.getByText('$0.002608').first().waitFor();
    await page.getByText('It is sunny in Oslo.').first().waitFor();
    await eventually(async () => assert.ok(await page.evaluate(() => performance.getEntriesByName('agentplane:run-rendered').length > 0)));
    await assertAccessible(page, 'a run');
    await screenshot(page, 'run');

    await steps.getByRole('link', { name: /Step 1 tool call/ }).click();
    await eventually(() => assert.ok(page.url().endsWith(`/runs/${toolRun.id}/steps/1`)));
    const detail = page.getByRole('region', { name: /Step 1: tool call weather/ });
    await detail.getByText('"city": "Oslo"').waitFor();
    await detail.getByRole('heading', { name: 'Result' }).waitFor();
  });

  it('opens a deep link to one step on that step', async () => {
    await visit(session, `/runs/${toolRun.id}/steps/2`);
    const detail = page.getByRole('region', { name: /Step 2: model call to gpt-4.1-mini/ });
    await detail.waitFor();
    await detail.getByText('It is sunny in Oslo.').waitFor();
    await detail.getByText(/800 in/).waitFor();
    const current = page.getByRole('link', { name: /Step 2 model call/ });
    assert.equal(await current.getAttribute('aria-current'), 'true');
  });

  it("shows a network run's hops as a tree with the router's decision, opens a hop onto its steps, and follows it", async () => {
    await visit(session, `/runs/${networkRun.id}`);
    const tree = page.getByRole('table', { name: /Steps/ });
    await tree.getByText('sequential: Member 1 of 2 in sequence.').waitFor();
    await tree.getByText('sequential: Member 2 of 2 in sequence.').waitFor();
    const [hop0, hop1] = networkRun.hops.map((h: { child_run_id: string }) => h.child_run_id);
    // The second hop cost $0.00168 of the run's $0.00224: 75%.
    assert.equal(networkRun.cost, '0.00224');
    const second = tree.getByRole('row').filter({ has: page.getByRole('link', { name: hop1 }) });
    await second.getByText('75.0%').waitFor();
    await page.getByRole('button', { name: 'Expand hop 0' }).click();
    await page.getByRole('button', { name: 'Collapse hop 0' }).waitFor();
    await tree.getByRole('link', { name: /Step 0 model call/ }).click();
    await eventually(() => assert.ok(page.url().endsWith(`/runs/${networkRun.id}/steps/h0.0`)));
    await page
      .getByRole('region', { name: /Hop 0, step 0/ })
      .getByText('A draft about otters.')
      .waitFor();
    await assertAccessible(page, 'a network run');
    await screenshot(page, 'run-network');

    await tree.getByRole('link', { name: hop0 }).click();
    await page.getByRole('heading', { level: 1, name: `Run ${hop0}` }).waitFor();
    await page.getByText('Hop of').getByRole('link', { name: networkRun.id }).waitFor();
  });

  it('streams the output of a run in progress and cancels it from the run view', async () => {
    await visit(session, `/runs/${hanging.id}`);
    await page.getByText('Thinking it over').waitFor();
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.getByText('The run was cancelled.').waitFor();
    await page.locator('.run-head .status', { hasText: 'cancelled' }).waitFor();
    await page.getByRole('button', { name: 'Cancel run' }).waitFor({ state: 'detached' });
    assert.equal((await stack.tenant.admin.get(`/v1/runs/${hanging.id}`)).body.status, 'cancelled');
  });

  it(`draws a run of ${MANY_STEPS} steps from its first request on, only the visible rows, and scrolling to the end shows the last`, async () => {
    // The pages of steps after the run's first are held back until its first rows are seen.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const laterPages = `**/v1/runs/${bigRun.id}/steps?**`;
    await page.route(laterPages, async (route) => {
      await held;
      await route.continue();
    });
    const tree = page.getByRole('table', { name: /Steps/ });
    const drawnRows = () => tree.locator('[role=rowgroup] [role=row]').count();
    try {
      await visit(session, `/runs/${bigRun.id}`);
      await tree.getByRole('link', { name: /Step 0 model call/ }).waitFor();
      assert.equal(await tree.getAttribute('aria-rowcount'), String(MANY_STEPS + 1));
      await page.getByRole('heading', { name: `Steps (${MANY_STEPS.toLocaleString('en-US')} steps)` }).waitFor();
      // The table has its full length already: its end holds the rows of the steps still being read.
      await page.locator('.step-scroll').evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
      await tree.getByText('Reading…').first().waitFor();
      // Scrolled past, the first step's row is no longer drawn (once the scroll's frame is drawn: its rows may
      // come a frame after the ones it reaches).
      await tree.getByRole('link', { name: /Step 0 / }).waitFor({ state: 'detached', timeout: 10_000 });
    } finally {
      release();
      await page.unroute(laterPages);
    }
    // Read, the last step takes its row at the end, in view; the whole of the run's steps is read by then, 21
    // requests that a busy machine may take most of a minute over.
    await tree.getByRole('link', { name: /Step 1999 tool call · lookup/ }).waitFor({ timeout: 60_000 });
    assert.ok((await drawnRows()) < 100, `${await drawnRows()} rows drawn`);
    assert.equal(await tree.getByText('Reading…').count(), 0);
    await tree.getByRole('link', { name: /Step 1999 / }).click();
    await page
      .getByRole('region', { name: /Step 1999: tool call lookup/ })
      .getByText('result 1999')
      .waitFor();
  });

  it("decides a waiting tool call on the live Approvals page, its arguments edited as JSON, and shows the decision on the run's step", async () => {
    const payer = await createAgent(stack.tenant.admin, {
      name: 'payer',
      tools: [
        {
          type: 'http',
          name: 'pay',
          url: `${tools.url}/echo`,
          parameters: { type: 'object', properties: { amount: { type: 'number' }, to: { type: 'string' } }, required: ['amount', 'to'] },
          approval: { mode: 'always' },
        },
      ],
    });
    await visit(session, '/approvals');
    await page.getByRole('heading', { level: 1, name: 'Approvals' }).waitFor();
    const waiting = page.getByRole('region', { name: 'Waiting for a decision' });
    await waiting.getByText('No tool call is waiting.').waitFor();

    // The call starts waiting while the page is open, and shows up without a reload.
    stack.openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"amount":250,"to":"acme"}' }] });
    stack.openai.enqueue({ text: ['Paid 200.'] });
    const run = (await stack.tenant.admin.post(`/v1/agents/${payer.id}/run`, { input: 'Pay acme.' })).body;
    assert.equal(run.status, 'requires_action');
    const card = waiting.getByRole('article', { name: `pay for ${run.id}` });
    await card.waitFor();
    await assertAccessible(page, 'the approvals page');
    await screenshot(page, 'approvals');
    const editor = card.getByLabel('Arguments (JSON; edit them to approve the call with yours)');
    assert.deepEqual(JSON.parse(await editor.inputValue()), { amount: 250, to: 'acme' });
    await editor.fill('{"amount": 200, "to": "acme"}');
    await card.getByLabel('Reason (optional; the model reads it)').fill('Capped at 200.');
    await card.getByRole('button', { name: 'Approve with these arguments' }).click();
    await page
      .getByRole('region', { name: 'Decided lately' })
      .getByRole('article', { name: `pay for ${run.id}` })
      .getByText(/^Approved by .*, with edited arguments: Capped at 200\.$/)
      .waitFor();

    const done = await runSatisfying(stack.tenant.admin, run.id, (r) => r.status === 'completed', 'the run did not go on');
    const step = done.steps.find((s: { type: string }) => s.type === 'tool_call');
    assert.deepEqual(JSON.parse(JSON.parse(step.output).body), { amount: 200, to: 'acme' });
    await visit(session, `/runs/${run.id}/steps/${step.index}`);
    const decision = page.getByRole('region', { name: 'Approval' });
    await decision.getByText(/^Approved by .*, with edited arguments: Capped at 200\.$/).waitFor();
    assert.deepEqual(JSON.parse(await decision.getByLabel('Arguments as approved').innerText()), { amount: 200, to: 'acme' });
  });

  it("shows a thread's messages and runs, a subject's memories with the words they came from, and forgets the subject", async () => {
    const admin = stack.tenant.admin;
    const concierge = await createAgent(admin, { name: 'concierge', memory: { enabled: true } });
    const thread = (await admin.post('/v1/threads', { subject_id: 'guest-7' })).body;
    stack.openai.enqueue({ text: ['Welcome, Mira.'] });
    const run = (
      await admin.post(`/v1/agents/${concierge.id}/run`, { input: 'My name is Mira and I live in Lisbon.', thread_id: thread.id })
    ).body;
    assert.equal(run.status, 'completed', JSON.stringify(run.error));

    await visit(session, '/threads');
    await page.getByLabel('Messages containing').fill('Lisbon');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('link', { name: thread.id }).click();
    await page.getByRole('heading', { level: 1, name: `Thread ${thread.id}` }).waitFor();
    await page.getByText('My name is Mira and I live in Lisbon.').waitFor();
    await page.getByText('Welcome, Mira.').waitFor();
    await page.getByRole('region', { name: 'Runs on this thread' }).getByRole('link', { name: run.id }).waitFor();
    await assertAccessible(page, 'a thread');
    await screenshot(page, 'thread');

    await eventually(async () => assert.equal((await admin.get('/v1/memories?subject_id=guest-7')).body.data.length, 2), {
      timeoutMs: 20_000,
      message: 'the memories were not stored',
    });
    await page.getByRole('link', { name: 'guest-7' }).first().click();
    await page.getByRole('heading', { level: 1, name: 'Memories' }).waitFor();
    await page.getByText('lives in: Lisbon').waitFor();
    await page.getByText('“I live in Lisbon”', { exact: false }).waitFor();
    await assertAccessible(page, 'a subject’s memories');
    await screenshot(page, 'memories');
    await page.getByRole('button', { name: 'Forget subject' }).click();
    await page.getByRole('button', { name: 'Forget guest-7' }).click();
    const receipt = page.getByRole('status', { name: 'What was forgotten' });
    await receipt.getByText('2 current and 0 superseded memories, with 2 sources').waitFor();
    await receipt.getByText('1 threads, with 1 user and 1 assistant messages').waitFor();
    await page.getByText('Nothing is remembered about guest-7.').waitFor();
    assert.equal((await admin.get(`/v1/threads/${thread.id}`)).status, 404);
  });

  it("lists the experiments as they run, filters them by dataset, shows one's items with their scores, and compares two: intervals and the items that changed most", async () => {
    const admin = stack.tenant.admin;
    const experimentsLink = page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Experiments' });
    await experimentsLink.click();
    await page.getByRole('region', { name: 'No experiments yet' }).getByText('agentplane eval --dataset ds_… --agent agent_…').waitFor();
    // gpt-4.1-mini knows the answers to q1 and q2, gpt-4.1-nano to all three.
    stack.openai.setFallback((body) => {
      const messages = body.messages as { role: string; content: unknown }[];
      const question = String(messages.filter((m) => m.role === 'user').at(-1)?.content);
      const known = body.model === 'gpt-4.1-nano' || question !== 'q3';
      return { text: [known ? question.replace('q', 'a') : 'no idea'], usage: { input: 100, output: 10 } };
    });
    try {
      const db = stack.api.services.db;
      const dataset = await createDataset(db, stack.tenant.projectId, { name: 'quiz', description: '', metadata: {}, scorers: [] });
      await addItems(
        db,
        dataset,
        ['q1', 'q2', 'q3'].map((q) => ({
          input: [{ role: 'user' as const, content: q }],
          fileIds: [],
          expected: q.replace('q', 'a'),
          metadata: {},
        })),
      );
      const quizzer = await createAgent(admin, { name: 'quizzer' });
      const start = async (overrides?: object) =>
        (await admin.post('/v1/experiments', { dataset_id: dataset.id, agent_id: quizzer.id, scorers: ['exact_match'], overrides })).body;
      const [baseline, candidate] = [await start(), await start({ model: 'gpt-4.1-nano' })];
      const unused = await createDataset(db, stack.tenant.projectId, { name: 'unused', description: '', metadata: {}, scorers: [] });

      // The list reads the experiments again while they run, so both end completed on the page without a reload.
      await visit(session, '/experiments');
      const listed = page.getByRole('table');
      const row = (id: string) => listed.getByRole('row').filter({ has: page.getByRole('rowheader', { name: id }) });
      for (const experiment of [baseline, candidate])
        await row(experiment.id).getByText('completed', { exact: true }).waitFor({ timeout: 60_000 });
      for (const experiment of [baseline, candidate])
        await eventually(async () => assert.equal((await admin.get(`/v1/experiments/${experiment.id}`)).body.status, 'completed'), {
          message: `experiment ${experiment.id} did not complete`,
        });
      await row(baseline.id).getByRole('cell', { name: 'exact_match 0.667' }).waitFor();
      await row(candidate.id).getByRole('cell', { name: 'exact_match 1.000' }).waitFor();
      await row(candidate.id).getByText('with model gpt-4.1-nano').waitFor();
      await row(candidate.id).getByRole('cell', { name: '3 of 3', exact: true }).waitFor();
      await row(candidate.id).getByRole('cell', { name: 'replay', exact: true }).waitFor();
      await row(candidate.id).getByText('quiz', { exact: true }).waitFor();
      await assertAccessible(page, 'the experiment list');
      await screenshot(page, 'experiments-list');

      await page.getByLabel('Dataset', { exact: true }).selectOption(unused.id);
      await eventually(() => assert.match(page.url(), new RegExp(`dataset_id=${unused.id}`)));
      await page.getByRole('region', { name: 'No experiments on this dataset yet' }).getByText(`--dataset ${unused.id}`).waitFor();
      await page.getByLabel('Dataset', { exact: true }).selectOption(dataset.id);
      await row(candidate.id).waitFor();
      assert.equal(await listed.locator('tbody tr').count(), 2);

      // Two picked on the same dataset open their comparison, the newer against the older: the API lists the newer
      // first, even when both were made in the same second.
      const [newer, older] = (await admin.get(`/v1/experiments?dataset_id=${dataset.id}`)).body.data as [{ id: string }, { id: string }];
      await page.getByLabel(`Compare ${baseline.id}`).check();
      await page.getByLabel(`Compare ${candidate.id}`).check();
      await page.getByRole('button', { name: 'Compare the picked two' }).click();
      await page.getByRole('heading', { level: 1, name: `${newer.id} against ${older.id}` }).waitFor();
      await page.getByRole('table', { name: 'Metrics' }).getByRole('rowheader', { name: 'exact_match' }).waitFor();

      // A dataset's page leads to its experiments, and an experiment's page back to the list.
      await visit(session, `/datasets/${dataset.id}`);
      await page.getByRole('link', { name: 'Experiments on this dataset' }).click();
      await eventually(() => assert.match(page.url(), new RegExp(`/experiments\\?dataset_id=${dataset.id}$`)));
      await row(baseline.id).getByRole('link', { name: baseline.id }).click();
      await page.getByRole('heading', { level: 1, name: `Experiment ${baseline.id}` }).waitFor();
      await page.getByRole('link', { name: '← Experiments' }).click();
      await page.getByRole('heading', { level: 1, name: 'Experiments' }).waitFor();

      await visit(session, `/experiments/${candidate.id}`);
      await page.getByRole('heading', { level: 1, name: `Experiment ${candidate.id}` }).waitFor();
      await page.getByText('3 completed, 0 failed, 0 cancelled of 3').waitFor();
      const items = page.getByRole('table');
      // The row whose output is a3: an id elsewhere in another row may contain the same two characters.
      const third = items.getByRole('row').filter({ has: page.getByRole('cell', { name: 'a3', exact: true }) });
      await third.getByText('exact_match 1.00').waitFor();
      await third.getByRole('link', { name: /^run_/ }).waitFor();
      await assertAccessible(page, 'an experiment');
      await screenshot(page, 'experiment');

      await page.getByLabel('Compare with the experiment').fill(baseline.id);
      await page.getByRole('button', { name: 'Compare' }).click();
      await page.getByRole('heading', { level: 1, name: `${candidate.id} against ${baseline.id}` }).waitFor();
      const exactMatch = page
        .getByRole('table', { name: 'Metrics' })
        .getByRole('row')
        .filter({ has: page.getByRole('rowheader', { name: 'exact_match' }) });
      await exactMatch.getByText(/^\+0\.333 \[0\.000, \+1\.000\]$/).waitFor();
      const changed = page.getByRole('region', { name: 'Items that changed most in exact_match' });
      assert.equal(await changed.getByRole('row').count(), 2, 'a header and the one item that changed');
      await changed.getByRole('cell', { name: '+1.000' }).waitFor();
      await assertAccessible(page, 'a comparison of experiments');
      await screenshot(page, 'experiment-comparison');
    } finally {
      stack.openai.setFallback(null);
    }
  });

  it("lists the datasets and a dataset's items with their input, expected answer, source run and tool calls", async () => {
    const admin = stack.tenant.admin;
    const dataset = (await admin.post('/v1/datasets', { name: 'weather questions', scorers: ['exact_match'] })).body;
    const added = await admin.post(`/v1/datasets/${dataset.id}/items`, {
      items: [
        { from_run_id: toolRun.id, expected: 'Sunny.' },
        { input: 'Is it raining in Bergen?', expected: { raining: true } },
      ],
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));

    await visit(session, '/datasets');
    const listed = page.getByRole('row').filter({ hasText: 'weather questions' });
    await listed.getByRole('cell', { name: '2', exact: true }).waitFor();
    await listed.getByRole('link', { name: dataset.id }).click();
    await page.getByRole('heading', { level: 1, name: 'weather questions' }).waitFor();
    const copied = page.getByRole('row').filter({ hasText: 'Weather in Oslo?' });
    await copied.getByRole('cell', { name: 'Sunny.' }).waitFor();
    await copied.getByRole('cell', { name: '1', exact: true }).waitFor();
    await page.getByRole('row').filter({ hasText: 'Is it raining in Bergen?' }).getByText('{"raining":true}').waitFor();
    await assertAccessible(page, 'a dataset');
    await copied.getByRole('link', { name: toolRun.id }).click();
    await page.getByRole('heading', { level: 1 }).filter({ hasText: toolRun.id }).waitFor();
  });

  it('reads as well in dark mode', async () => {
    const dark = await openConsole(stack.api.url, { colorScheme: 'dark' });
    try {
      await signIn(dark.page, stack.tenant.admin.key!);
      await visit(dark, `/runs/${networkRun.id}`);
      await dark.page.getByText('sequential: Member 1 of 2 in sequence.').waitFor();
      assert.equal(await dark.page.evaluate('document.documentElement.dataset.theme'), 'dark');
      await assertAccessible(dark.page, 'a network run, dark');
      await screenshot(dark.page, 'run-network-dark');
      await visit(dark, '/runs');
      await dark.page.getByRole('link', { name: toolRun.id }).waitFor();
      await assertAccessible(dark.page, 'the run list, dark');
      await screenshot(dark.page, 'runs-list-dark');
    } finally {
      await dark.close();
    }
  });
});
