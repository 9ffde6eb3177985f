/**
 * How a run is orchestrated, as far as it decides what a run costs: what Temporal is asked to do for it,
 * and which writes commit together.
 */
import assert from 'node:assert/strict';
import { runWorkflowId } from '../../workflows/runs/client.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { startMcpServer } from '../support/mcp-server.js';

describe('run orchestration', function () {
  this.timeout(120_000);
  let stack: RunsStack;

  before(async () => {
    stack = await startRunsStack('run-orchestration');
  });

  after(async () => {
    await stack?.stop();
  });

  /** The activities the run's workflow scheduled (local activities are not among them), once it has ended. */
  async function activitiesScheduledFor(runId: string): Promise<(string | null | undefined)[]> {
    const handle = stack.api.services.temporal.workflow.getHandle(runWorkflowId(runId));
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    return events
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => e.activityTaskScheduledEventAttributes!.activityType?.name);
  }

  it('gives Temporal one activity task for a one-step run, the model call, and two workflow tasks', async () => {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Done.'], usage: { input: 5, output: 1 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Finish.' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body));

    assert.deepEqual(
      await activitiesScheduledFor(run.body.id),
      ['callModel'],
      'admission, start and end are local activities, run within workflow tasks',
    );
    const events = (await stack.api.services.temporal.workflow.getHandle(runWorkflowId(run.body.id)).fetchHistory()).events ?? [];
    assert.equal(events.filter((e) => e.workflowTaskCompletedEventAttributes).length, 2);
  });

  it('starts a run whose tools must be listed by an MCP server in an activity of its own, where a cancellation reaches it at once', async () => {
    const mcp = await startMcpServer();
    try {
      const agent = await createAgent(stack.tenant.admin, { tools: [{ type: 'mcp', server_label: 'calc', server_url: mcp.url }] });
      stack.openai.enqueue({ text: ['No tool needed.'], usage: { input: 5, output: 3 } });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Hi.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body));
      assert.deepEqual(await activitiesScheduledFor(run.body.id), ['startRun', 'callModel']);
    } finally {
      await mcp.close();
    }
  });

  it('ends a run in the transaction that records its final reply', async () => {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['The answer.'], usage: { input: 5, output: 2 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Answer.' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body));
    assert.equal(run.body.output.text, 'The answer.');
    // now() is the time its transaction began: one value for every row written in it.
    const { rows } = await stack.api.services.db.query<{ run_completed: Date; step_completed: Date }>(
      `SELECT r.completed_at AS run_completed, s.completed_at AS step_completed FROM runs r JOIN run_steps s ON s.run_id = r.id WHERE r.id = $1`,
      [run.body.id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.run_completed.getTime(), rows[0]!.step_completed.getTime());
  });
});
