import assert from 'node:assert/strict';
import { newTenant, startTestApi, type Tenant, type TestApi } from '../support/api.js';
import { eventually } from '../support/eventually.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import { ordering, promptedReplies } from '../support/model-servers/prompted.js';
import { isolatedNamespace } from '../support/services.js';
import { createdAgent, startedRun, type RunSeen } from '../hostile/attacks/attack.js';
import { DEFAULT_FAIR_SHARE } from '../../workflows/project-shares.js';
import { runWorkflowId } from '../../workflows/runs/ids.js';

/** The operator's share of a worker's activity slots for one project's calls to its hosts, well under the default. */
const CALLS_AT_ONCE = 3;

describe('AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT', function () {
  this.timeout(120_000);
  let tools: TestToolServer;
  let model: OpenAiServer;
  let api: TestApi;
  let tenant: Tenant;

  before(async () => {
    tools = await startToolServer();
    model = await startOpenAiServer();
    model.setFallback(promptedReplies({ text: ['Done.'], usage: { input: 10, output: 3 } }));
    api = await startTestApi({
      namespace: await isolatedNamespace('host-calls'),
      modelEnv: { OPENAI_BASE_URL: model.url },
      fairShare: { ...DEFAULT_FAIR_SHARE, hostCallsPerProject: CALLS_AT_ONCE },
    });
    tenant = await newTenant(api, 'host calls');
  });

  after(async () => {
    await api?.stop();
    await model?.stop();
    await tools?.close();
  });

  it("holds a project's calls to its hosts to the operator's share of a worker, and makes the rest once there is room", async () => {
    const agent = await createdAgent(tenant.admin, {
      name: 'slow calls',
      model: 'gpt-4.1-mini',
      tools: [{ type: 'http', name: 'slow', url: `${tools.url}/held`, timeout_ms: 60_000 }],
    });
    const calls = CALLS_AT_ONCE + 2;
    const runId = await startedRun(tenant.admin, agent, ordering({ call: { name: 'slow', arguments: {}, times: calls } }));
    await eventually(() => assert.equal(tools.held, CALLS_AT_ONCE), { timeoutMs: 20_000, message: 'the calls did not reach the host' });
    // The calls past the share were refused (answered so, not made), and wait: none more reached the host.
    const history = api.services.temporal.workflow.getHandle(runWorkflowId(runId));
    await eventually(
      async () => {
        const refusals = ((await history.fetchHistory()).events ?? []).filter((event) => {
          const answer = event.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data;
          return answer && Object.hasOwn(JSON.parse(Buffer.from(answer).toString('utf8')) ?? {}, 'slotsTaken');
        }).length;
        assert.ok(refusals >= calls - CALLS_AT_ONCE, `${refusals} refusals`);
      },
      { timeoutMs: 20_000, message: 'the calls past the share were not refused' },
    );
    assert.equal(tools.held, CALLS_AT_ONCE);
    await eventually(
      async () => {
        tools.releaseHeld();
        const run = await tenant.admin.get<RunSeen>(`/v1/runs/${runId}`);
        assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      },
      { timeoutMs: 30_000, message: 'the run did not complete once the host answered' },
    );
    const steps = await tenant.admin.get<{ data: RunSeen['steps'] }>(`/v1/runs/${runId}/steps?limit=100`);
    const answered = steps.body.data.filter((step) => step.type === 'tool_call');
    assert.equal(answered.length, calls);
    for (const step of answered) assert.equal(step.is_error, false, JSON.stringify(step));
  });
});
