import assert from 'node:assert/strict';
import { SseReader } from '../support/sse.js';
import { eventually } from '../support/eventually.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';

describe('an API stopping while runs are followed', function () {
  this.timeout(60_000);
  let stack: RunsStack;

  before(async () => {
    stack = await startRunsStack('runs-shutdown');
  });

  after(async () => {
    await stack?.openai.stop();
    await stack?.anthropic.stop();
  });

  it('ends its open event streams and waiting requests, so it stops; the client can resume elsewhere', async () => {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Still thinking'], hang: true });
    const stream = await SseReader.open(`${stack.api.url}/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tenant.admin.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Think.', stream: true }),
    });
    await stream.next((e) => e.event === 'output_text.delta');
    const waiting = fetch(`${stack.api.url}/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tenant.admin.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Wait for me.' }),
    });
    await eventually(async () => {
      const runs = await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs`);
      assert.equal(runs.body.data.length, 2);
    });
    await stack.api.stop();
    await stream.done;
    assert.ok(!stream.events.some((e) => e.event.startsWith('run.completed')), 'the stream ended with the run still going');
    assert.equal((await waiting).status, 202);
  });
});
