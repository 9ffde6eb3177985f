/**
 * One platform, two projects: a hostile tenant does each abusive thing a tenant can do with its own keys,
 * while a steady tenant makes its one-step runs, tool calls and webhooks. The steady tenant must notice
 * nothing: every run completes, no request of its answers 429 or 5xx, every tool call and webhook arrives.
 * How much slower it gets is measured by `npm run bench -- isolation`, not here.
 */
import assert from 'node:assert/strict';
import { newTenant, startTestApi, type TestApi } from '../support/api.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import { promptedReplies } from '../support/model-servers/prompted.js';
import { isolatedNamespace } from '../support/services.js';
import { startRemoteHosts, type Battleground, type RemoteHosts } from './battleground.js';
import { prepareSteadyTenant, type SteadyOutcome, type SteadyTenant } from './steady-tenant.js';
import { hugeRunLists, openStreams, queueBehindSlowRun } from './attacks/run-abuse.js';
import { floodingMcpListing, hangingHost, poisonedPattern, silentDns } from './attacks/tool-abuse.js';
import { HOST_CALL_SLOTS_PER_PROJECT } from '../../workflows/slot-shares.js';
import { SLOW_START_ATTEMPTS, TOOL_CALL_ATTEMPTS } from '../../workflows/runs/workflow.js';
import { startMcpServer } from '../support/mcp-server.js';
import { runWorkflowId } from '../../workflows/runs/ids.js';
import { eventually } from '../support/eventually.js';
import { ordering } from '../support/model-servers/prompted.js';
import { createdAgent, startedRun, type Attack, type RunSeen } from './attacks/attack.js';

/** The steady tenant's runs during each abuse, two at a time; it stops at the third failure. */
const STEADY_RUNS = 12;
const ENOUGH_FAILURES = 3;
const OPEN_STREAMS = 400;
const QUEUED_RUNS = 100;
/** 100 runs without their steps' payloads fit in far less; one 1 MiB tool output alone would not. */
const RUN_LIST_BYTES = 1024 * 1024;

describe('a hostile tenant', function () {
  this.timeout(120_000);
  let hosts: RemoteHosts;
  let model: OpenAiServer;
  let api: TestApi;
  let ground: Battleground;
  let steady: SteadyTenant;
  /** The abuse under way, stopped after each test however the test ended. */
  let underway: Attack<unknown> | undefined;

  /** The steady tenant's work while the hostile tenant keeps up an abuse, and what the hostile tenant saw. */
  async function whileAbusing<Seen>(starting: Promise<Attack<Seen>>): Promise<{ outcome: SteadyOutcome; seen: Seen }> {
    const attack = await starting;
    underway = attack;
    const outcome = await steady.work(STEADY_RUNS, { maxFailures: ENOUGH_FAILURES });
    underway = undefined;
    return { outcome, seen: await attack.stop() };
  }

  before(async () => {
    hosts = await startRemoteHosts();
    model = await startOpenAiServer();
    model.setFallback(promptedReplies({ text: ['Steady answer.'], usage: { input: 10, output: 3 } }));
    // The platform's outbound lookups go to the test DNS server, which knows the steady tenant's hosts.
    process.env.AGENTPLANE_DNS_SERVERS = hosts.dns.address;
    api = await startTestApi({ namespace: await isolatedNamespace('hostile'), modelEnv: { OPENAI_BASE_URL: model.url } });
    const [hostile, steadyTenant] = await Promise.all([newTenant(api, 'hostile'), newTenant(api, 'steady')]);
    ground = { apiUrl: api.url, db: api.services.db, model: 'gpt-4.1-mini', hosts, hostile: hostile.admin, steady: steadyTenant.admin };
    steady = await prepareSteadyTenant(ground);
  });

  afterEach(async () => {
    await underway?.stop();
    underway = undefined;
  });

  after(async () => {
    await api?.stop();
    await model?.stop();
    await hosts?.close();
    delete process.env.AGENTPLANE_DNS_SERVERS;
  });

  it('leaves alone, the steady tenant completes its runs, tool calls and webhooks', async () => {
    const outcome = await steady.work(STEADY_RUNS);
    assert.deepEqual(outcome.failures, []);
  });

  it('listing runs that hold 1 MiB tool outputs, 100 at a time, gets lists without the outputs, and the other tenant notices nothing', async () => {
    const {
      outcome,
      seen: { lists },
    } = await whileAbusing(hugeRunLists(ground));
    assert.deepEqual(outcome.failures, []);
    assert.ok(lists.length > 0);
    for (const list of lists) {
      assert.equal(list.status, 200);
      assert.ok(list.bytes < RUN_LIST_BYTES, `a list of 100 runs took ${list.bytes} bytes`);
    }
  });

  it(`holding ${OPEN_STREAMS} event streams open on a run gets 429 with Retry-After beyond its share, and the other tenant notices nothing`, async () => {
    const {
      outcome,
      seen: { statuses, withRetryAfter },
    } = await whileAbusing(openStreams(ground, OPEN_STREAMS));
    assert.deepEqual(outcome.failures, []);
    assert.deepEqual(Object.keys(statuses).sort(), ['200', '429']);
    assert.equal(withRetryAfter, statuses[429]);
  });

  it(`queueing ${QUEUED_RUNS} runs behind one that never ends queues them, and the other tenant notices nothing`, async () => {
    const {
      outcome,
      seen: { queued },
    } = await whileAbusing(queueBehindSlowRun(ground, QUEUED_RUNS));
    assert.deepEqual(outcome.failures, []);
    assert.equal(queued, QUEUED_RUNS);
  });

  it('calling a tool on a host whose name servers never answer holds up nobody else: the other tenant still reaches its tool and webhook hosts', async () => {
    const {
      outcome,
      seen: { queries },
    } = await whileAbusing(silentDns(ground));
    assert.deepEqual(outcome.failures, []);
    assert.ok(queries > 0);
  });

  it("calling a tool on a host that never answers, more calls at once than a worker has activity slots, holds only the project's share of them, and the other tenant notices nothing", async () => {
    const {
      outcome,
      seen: { calledAtOnce, failedCalls },
    } = await whileAbusing(hangingHost(ground));
    assert.deepEqual(outcome.failures, []);
    assert.equal(calledAtOnce, HOST_CALL_SLOTS_PER_PROJECT);
    // Its calls past its share wait for room: none fails for it.
    assert.equal(failedCalls, 0);
  });

  it("makes a project's calls and run starts past its share of the slots once there is room, however long they waited", async function () {
    // Past the 6 attempts of a run's start, each wait doubling from a second: up to about a minute in all.
    this.timeout(180_000);
    const agent = await createdAgent(ground.hostile, {
      name: 'many slow calls',
      model: ground.model,
      max_steps: 50,
      tools: [{ type: 'http', name: 'slow', url: `${hosts.tools.url}/held`, timeout_ms: 60_000 }],
    });
    const calls = HOST_CALL_SLOTS_PER_PROJECT + 5;
    const runId = await startedRun(ground.hostile, agent, ordering({ call: { name: 'slow', arguments: {}, times: calls } }));
    await eventually(() => assert.equal(hosts.tools.held, HOST_CALL_SLOTS_PER_PROJECT), {
      timeoutMs: 20_000,
      message: 'the calls did not reach the host',
    });
    // A run whose start asks an MCP server for its tools: a call to a host the project's agent names, past its share.
    const mcp = await startMcpServer();
    try {
      const lister = await createdAgent(ground.hostile, {
        name: 'lists tools',
        model: ground.model,
        tools: [{ type: 'mcp', server_label: 'tools', server_url: mcp.url }],
      });
      const listingRunId = await startedRun(ground.hostile, lister, 'Use your tools.');
      // Held until each call and the start past the share were refused more often than they have attempts.
      const waits = async (id: string) => {
        const history = await api.services.temporal.workflow.getHandle(runWorkflowId(id)).fetchHistory();
        return history.events?.filter((event) => event.timerStartedEventAttributes).length ?? 0;
      };
      await eventually(
        async () => {
          const [calling, starting] = await Promise.all([waits(runId), waits(listingRunId)]);
          assert.ok(calling >= (calls - HOST_CALL_SLOTS_PER_PROJECT) * TOOL_CALL_ATTEMPTS, `the calls waited ${calling} times`);
          assert.ok(starting >= SLOW_START_ATTEMPTS, `the start waited ${starting} times`);
        },
        // Each wait a little longer when the worker finds the project's calls refused faster than it lets them ask.
        { timeoutMs: 90_000, message: 'the calls and the start past the share did not wait' },
      );
      assert.equal(hosts.tools.held, HOST_CALL_SLOTS_PER_PROJECT);
      assert.ok(!mcp.methods.includes('tools/list'), 'the start past the share asked the MCP server');
      const statuses = await eventually(
        async () => {
          hosts.tools.releaseHeld();
          const ran = await Promise.all([runId, listingRunId].map((id) => ground.hostile.get<RunSeen>(`/v1/runs/${id}`)));
          for (const run of ran) assert.ok(['completed', 'failed'].includes(run.body.status), `a run is ${run.body.status}`);
          return ran.map((run) => [run.body.status, run.body.error]);
        },
        { timeoutMs: 45_000, message: 'the runs did not end once the host answered' },
      );
      assert.deepEqual(statuses, [
        ['completed', null],
        ['completed', null],
      ]);
      assert.ok(mcp.methods.includes('tools/list'));
    } finally {
      await mcp.close();
    }
    const steps = await ground.hostile.get<{ data: RunSeen['steps'] }>(`/v1/runs/${runId}/steps?limit=100`);
    const answered = steps.body.data.filter((step) => step.type === 'tool_call');
    assert.equal(answered.length, calls);
    for (const step of answered) assert.equal(step.is_error, false, JSON.stringify(step));
  });

  it('offering tools from an MCP server that lists 40 MiB of them fails its own runs over the listing limit, and the other tenant notices nothing', async () => {
    const {
      outcome,
      seen: { runs },
    } = await whileAbusing(floodingMcpListing(ground));
    assert.deepEqual(outcome.failures, []);
    assert.ok(runs.length > 0);
    for (const run of runs) {
      assert.equal(run.status, 'failed', `a flooded run ended ${run.status}`);
      assert.equal(run.error?.code, 'tools_too_large');
    }
  });

  it('calling a tool whose argument pattern a backtracking engine would take hours on gets the mismatch at once, and the other tenant notices nothing', async () => {
    const {
      outcome,
      seen: { runs },
    } = await whileAbusing(poisonedPattern(ground));
    assert.deepEqual(outcome.failures, []);
    assert.ok(runs.length > 0);
    for (const run of runs) {
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      const call = run.steps.find((step) => step.type === 'tool_call');
      assert.equal(call?.is_error, true);
      assert.match(call?.output ?? '', /do not match the tool's parameters/);
    }
  });
});
