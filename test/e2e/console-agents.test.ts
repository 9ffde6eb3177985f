import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { newTenant } from '../support/api.js';
import { assertAccessible, closeBrowser, openConsole, screenshot, signIn, visit, type ConsoleSession } from '../support/browser.js';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';

describe('console: agents and networks', function () {
  this.timeout(180_000);
  let stack: RunsStack;
  let session: ConsoleSession | undefined;

  before(async () => {
    stack = await startRunsStack('console-agents');
  });

  afterEach(async () => {
    await session?.close();
    session = undefined;
  });

  after(async () => {
    await closeBrowser();
    await stack?.stop();
  });

  async function signedIn(key: string, colorScheme: 'light' | 'dark' = 'light'): Promise<ConsoleSession> {
    session = await openConsole(stack.api.url, { colorScheme });
    await signIn(session.page, key);
    return session;
  }

  it('shows the curl commands that create an agent and a network while the project has none', async () => {
    const empty = await newTenant(stack.api, 'console-agents-empty');
    const { page } = await signedIn(empty.admin.key!);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('heading', { level: 1, name: 'Agents' }).waitFor();
    const agents = page.getByRole('region', { name: 'No agents yet' });
    await agents.waitFor();
    const curl = await agents.locator('pre').innerText();
    assert.match(curl, /^curl -X POST http:\/\/.+\/v1\/agents \\/);
    assert.match(curl, /"name":"support","model":"auto"/);
    await assertAccessible(page, 'the agents list when there are none');
    await screenshot(page, 'agents-empty');
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Networks' }).click();
    const networks = page.getByRole('region', { name: 'No networks yet' });
    assert.match(await networks.locator('pre').innerText(), /-X POST http:\/\/.+\/v1\/networks \\[\s\S]*"router":\{"type":"sequential"\}/);
  });

  it('pages through agents twenty at a time, each page a link of its own', async () => {
    const tenant = await newTenant(stack.api, 'console-agents-pages');
    for (let n = 1; n <= 21; n++) await createAgent(tenant.admin, { name: `agent-${String(n).padStart(2, '0')}` });
    const { page } = await signedIn(tenant.admin.key!);
    await page.getByRole('link', { name: 'Agents' }).click();
    const names = page.getByRole('table').getByRole('rowheader').getByRole('link');
    await page.getByRole('link', { name: 'agent-21' }).waitFor();
    assert.equal(await names.count(), 20);
    const pages = page.getByRole('navigation', { name: 'Pages of agents' });
    await pages.getByRole('link', { name: 'Older →' }).click();
    await page.waitForURL(/\/console\/agents\?after=agent_/);
    await page.getByRole('link', { name: 'agent-01' }).waitFor();
    assert.deepEqual(await names.allInnerTexts(), ['agent-01']);
    await page.reload();
    await page.getByRole('link', { name: 'agent-01' }).waitFor();
    await pages.getByRole('link', { name: '← Newer' }).click();
    await page.getByRole('link', { name: 'agent-21' }).waitFor();
    assert.equal(await names.count(), 20);
    assert.equal(await pages.getByRole('link', { name: '← Newer' }).count(), 0);
  });

  it('lists agents, opens one, streams a run’s answer into the page as it arrives, then lists the run', async () => {
    const agent = await createAgent(stack.tenant.admin, {
      name: 'geographer',
      instructions: 'You answer questions about places.',
      metadata: { team: 'atlas' },
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    stack.openai.enqueue({ text: ['Paris', ' is', ' the capital.'], usage: { input: 100, output: 20 }, pause: { chunks: 1, until: held } });
    const { page } = await signedIn(stack.tenant.admin.key!);

    await page.getByRole('link', { name: 'Agents' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'geographer' }) });
    await row.waitFor();
    assert.match(await row.innerText(), /gpt-4\.1-mini\s+1\s+0\s+—/);
    await assertAccessible(page, 'the agents list');
    await screenshot(page, 'agents-list');

    await row.getByRole('link', { name: 'geographer' }).click();
    await page.getByRole('heading', { level: 1, name: 'Agent geographer' }).waitFor();
    await page.getByText('You answer questions about places.').waitFor();
    await page.getByRole('heading', { name: 'Recent runs' }).waitFor();
    await page.getByRole('region', { name: 'No runs yet' }).waitFor();

    await page.getByLabel('Message').fill('What is the capital of France?');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const answer = page.getByRole('log', { name: 'Answer' });
    // The model has sent its first words and waits: they are on the page before the run ends.
    await answer.getByText('Paris').waitFor();
    assert.equal(await page.getByRole('status').filter({ hasText: 'Running…' }).count(), 1);
    assert.equal(await page.getByRole('status').filter({ hasText: 'Completed' }).count(), 0);
    release();
    await answer.getByText('Paris is the capital.').waitFor();
    const status = page.getByRole('status').filter({ hasText: 'Completed' });
    await status.waitFor();
    const runLink = status.getByRole('link', { name: /^run_/ });
    const runId = await runLink.innerText();
    const finished = await runSatisfying(stack.tenant.admin, runId, (run) => run.status === 'completed', 'the run did not complete');
    assert.equal(finished.output.text, 'Paris is the capital.');
    assert.equal(finished.agent_id, agent.id);

    const history = page.getByRole('table', { name: 'Runs of this agent, newest first' });
    await history.getByRole('link', { name: runId }).waitFor();
    assert.match(await history.getByRole('row').filter({ hasText: runId }).innerText(), /completed\s+1\s+gpt-4\.1-mini/);
    await page
      .getByRole('table', { name: 'Versions' })
      .getByRole('row')
      .filter({ hasText: 'current' })
      .getByRole('link', { name: runId })
      .waitFor();
    await assertAccessible(page, 'an agent after a run');
    await screenshot(page, 'agent-detail');

    await runLink.click();
    await page.waitForURL(new RegExp(`/console/runs/${runId}$`));
  });

  it('shows a run that fails as failed, with its error, and links to it', async () => {
    const agent = await createAgent(stack.tenant.admin, { name: 'unlucky' });
    stack.openai.enqueue({ status: 400 });
    const { page } = await signedIn(stack.tenant.admin.key!);
    await visit(session!, `/agents/${agent.id}`);
    await page.getByLabel('Message').fill('Try.');
    await page.getByLabel('Message').press('Control+Enter');
    const status = page.getByRole('status').filter({ hasText: 'Failed' });
    await status.waitFor();
    await page.getByRole('alert').filter({ hasText: '(model_rejected)' }).waitFor();
    const runId = await status.getByRole('link', { name: /^run_/ }).innerText();
    assert.equal((await stack.tenant.admin.get(`/v1/runs/${runId}`)).body.error.code, 'model_rejected');
    await page
      .getByRole('table', { name: 'Runs of this agent, newest first' })
      .getByRole('row')
      .filter({ hasText: runId })
      .getByText('failed')
      .waitFor();
  });

  it('shows the API’s refusal of a run over budget, and starts nothing', async () => {
    const agent = await createAgent(stack.tenant.admin, { name: 'spender' });
    stack.openai.enqueue({ text: ['Spent.'], usage: { input: 1000, output: 1000 } });
    const first = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Spend.' });
    assert.equal(first.body.status, 'completed');
    const budget = await stack.tenant.admin.post('/v1/budgets', {
      scope: { type: 'agent', id: agent.id },
      period: 'day',
      limit_usd: '0.0001',
    });
    assert.equal(budget.status, 201, JSON.stringify(budget.body));
    const { page } = await signedIn(stack.tenant.admin.key!);
    await visit(session!, `/agents/${agent.id}`);
    await page.getByLabel('Message').fill('Spend more.');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'Budget exceeded' });
    await alert.waitFor();
    assert.equal(await page.getByRole('log', { name: 'Answer' }).count(), 0);
    assert.equal((await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs`)).body.data.length, 1);
  });

  it('shows an agent and a network Kubernetes manages read-only, naming the resource to edit, and deletes an unmanaged agent once confirmed', async () => {
    const resource = { kind: 'Agent', namespace: 'support', name: 'researcher', uid: randomUUID() };
    const created = await stack.tenant.admin.post('/v1/agents', {
      name: 'researcher',
      model: 'auto',
      managed_by: 'kubernetes',
      managed_resource: resource,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { page } = await signedIn(stack.tenant.admin.key!);
    await page.getByRole('link', { name: 'Agents' }).click();
    assert.match(await page.getByRole('row').filter({ hasText: 'researcher' }).innerText(), /Kubernetes support\/researcher/);
    await page.getByLabel('Managed by').selectOption('kubernetes');
    await page.waitForURL(/\/console\/agents\?managed_by=kubernetes$/);
    await page.getByRole('link', { name: 'geographer' }).waitFor({ state: 'detached' });
    assert.deepEqual(await page.getByRole('table').getByRole('rowheader').getByRole('link').allInnerTexts(), ['researcher']);
    await page.getByRole('link', { name: 'researcher' }).click();
    const notice = page.getByRole('region', { name: 'Managed by Kubernetes' });
    await notice.waitFor();
    assert.match(await notice.innerText(), /read-only here: edit the Agent support\/researcher/);
    assert.match(await notice.innerText(), /kubectl edit agents\.agentplane\.io\/researcher -n support/);
    assert.equal(await page.getByRole('button', { name: /delete|edit/i }).count(), 0);
    await assertAccessible(page, 'a managed agent');
    await screenshot(page, 'agent-managed');

    const desk = { kind: 'AgentNetwork', namespace: 'support', name: 'desk', uid: randomUUID() };
    const network = await stack.tenant.admin.post('/v1/networks', {
      name: 'desk',
      members: [created.body.id],
      router: { type: 'sequential' },
      managed_by: 'kubernetes',
      managed_resource: desk,
    });
    assert.equal(network.status, 201, JSON.stringify(network.body));
    await visit(session!, `/networks/${network.body.id}`);
    const networkNotice = page.getByRole('region', { name: 'Managed by Kubernetes' });
    await networkNotice.waitFor();
    assert.match(
      await networkNotice.innerText(),
      /edit the AgentNetwork support\/desk[\s\S]*kubectl edit agentnetworks\.agentplane\.io\/desk -n support/,
    );
    assert.equal(await page.getByRole('button', { name: /delete|edit/i }).count(), 0);

    const plain = await createAgent(stack.tenant.admin, { name: 'disposable' });
    await visit(session!, `/agents/${plain.id}`);
    await page.getByRole('button', { name: 'Delete agent' }).click();
    await page.getByRole('button', { name: 'Yes, delete disposable' }).click();
    await page.getByRole('heading', { level: 1, name: 'Agents' }).waitFor();
    assert.equal((await stack.tenant.admin.get(`/v1/agents/${plain.id}`)).status, 404);
    await visit(session!, `/agents/${plain.id}`);
    await page.getByRole('heading', { level: 1, name: `Agent ${plain.id}` }).waitFor();
    await page.getByRole('alert').filter({ hasText: plain.id }).waitFor();
  });

  it('shows a network’s members, router and runs in the dark theme the system asks for', async () => {
    const scout = await createAgent(stack.tenant.admin, { name: 'scout' });
    const writer = await createAgent(stack.tenant.admin, { name: 'writer' });
    const created = await stack.tenant.admin.post('/v1/networks', {
      name: 'newsroom',
      members: [scout.id, writer.id],
      router: { type: 'supervisor', instructions: 'Send research to the scout and prose to the writer.', model: 'gpt-4.1-mini' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const network = created.body;
    const route = (next: string, reason: string) => ({
      tool_calls: [{ name: 'route', arguments: JSON.stringify({ next, reason }) }],
      usage: { input: 10, output: 5 },
    });
    stack.openai.enqueue(route(scout.id, 'Research comes first.'));
    stack.openai.enqueue({ text: ['Found', ' three sources.'], usage: { input: 10, output: 5 } });
    stack.openai.enqueue(route('finish', 'The research is done.'));

    const { page } = await signedIn(stack.tenant.admin.key!, 'dark');
    assert.equal(await page.locator('html').getAttribute('data-theme'), 'dark');
    await page.getByRole('link', { name: 'Networks' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'newsroom' }) });
    await row.waitFor();
    assert.match(await row.innerText(), /supervisor\s+2\s+1/);
    await assertAccessible(page, 'the networks list in dark mode');
    await screenshot(page, 'networks-list-dark');

    await row.getByRole('link', { name: 'newsroom' }).click();
    await page.getByRole('heading', { level: 1, name: 'Network newsroom' }).waitFor();
    const members = page.getByRole('region', { name: 'Members' });
    await members.getByRole('link', { name: 'scout' }).waitFor();
    assert.deepEqual(await members.getByRole('listitem').allInnerTexts(), ['scout (gpt-4.1-mini)', 'writer (gpt-4.1-mini)']);
    const router = page.getByRole('region', { name: 'Router' });
    assert.match(await router.innerText(), /Supervisor: a router model picks the next member/);
    assert.match(await router.innerText(), /gpt-4\.1-mini/);
    await router.getByText('Send research to the scout and prose to the writer.').waitFor();

    await page.getByLabel('Message').fill('Research the story.');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const answer = page.getByRole('log', { name: 'Answer' });
    await answer.getByText('Found three sources.').waitFor();
    await answer.getByRole('link', { name: 'scout' }).waitFor();
    await answer.getByText('Research comes first.').waitFor();
    const status = page.getByRole('status').filter({ hasText: 'Completed' });
    await status.waitFor();
    const runId = await status.getByRole('link', { name: /^run_/ }).innerText();
    const finished = await runSatisfying(
      stack.tenant.admin,
      runId,
      (run) => run.status === 'completed',
      'the network run did not complete',
    );
    assert.equal(finished.network_id, network.id);
    assert.deepEqual(
      finished.hops.map((hop: { agent_id: string }) => hop.agent_id),
      [scout.id],
    );
    await page.getByRole('table', { name: 'Runs of this network, newest first' }).getByRole('link', { name: runId }).waitFor();
    await assertAccessible(page, 'a network in dark mode');
    await screenshot(page, 'network-detail-dark');

    await members.getByRole('link', { name: 'writer' }).click();
    await page.getByRole('heading', { level: 1, name: 'Agent writer' }).waitFor();
  });
});
