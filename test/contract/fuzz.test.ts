/**
 * The contract fuzz run: schemathesis reads /v1/openapi.json, generates valid and invalid requests for
 * every operation (and sequences of them, following the links it infers between operations), and checks
 * each answer against the document. It must find nothing. What it leaves out, and why, is in hooks.py.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findTool } from '../../cli/tools.js';
import { newTenant, sharedApi, type TestApi } from '../support/api.js';
import type { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';

const hooksPath = fileURLToPath(
  new URL(import.meta.url.includes('/dist/') ? '../../../test/contract/hooks.py' : './hooks.py', import.meta.url),
);

// Bounded by the number of examples, not by time, so that a slow machine runs the same cases, only later. The
// fuzzing phase draws this many valid and as many invalid requests per operation: half schemathesis's default,
// which took 200 CPU-s more of the suite's two cores (about 1.7 minutes of it) for cases drawn from the same
// strategies. The coverage phase still tries every operation's boundary values, deterministically, and the
// stateful phase its sequences with the default number of examples.
const MAX_EXAMPLES = 50;
const MAX_STATEFUL_EXAMPLES = 100;
const SEED = 20_240_601;
// Drawing examples is most of the run's time, and schemathesis's workers are threads of one Python process, which
// draw with one core between them (and on Python 3.11 can trip over each other parsing source). The run is split
// in lanes instead, each a process with one worker and a tenant of its own, that run at once: each fuzzes every
// LANES-th operation in the document's order, and one more runs the stateful phase, whose sequences span every
// operation. Every operation is fuzzed, in one lane; more lanes than cores keep the cores busy while a lane waits
// on a run that takes its time to end.
const LANES = 3;
// A backstop for a run that hangs, well above what a slow machine needs for the same cases.
const RUN_LIMIT_MS = 15 * 60_000;
// A run request may wait up to 30 s for its run to end before it answers 202 (docs/api.md): a request is
// given longer than that before it counts as unanswered, or as too slow (schemathesis's own limit is 10 s).
const REQUEST_TIMEOUT_SECONDS = 40;
// How long the deliveries already under way may take to end once their endpoints are gone.
const DRAIN_LIMIT_MS = 3 * 60_000;

/** Runs `st run …` to its end and returns its exit code and its report (stdout and stderr, interleaved). */
function runSchemathesis(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; report: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(findTool('schemathesis'), ['run', ...args], { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    const limit = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(limit);
      resolve({ code, report: Buffer.concat(chunks).toString('utf8') });
    });
  });
}

/**
 * The endpoints the run registered (to unreachable or made-up addresses) would go on receiving the project's
 * events, and failing, for the rest of the suite; deleting them stops their deliveries.
 */
async function deleteWebhookEndpoints(admin: ApiClient): Promise<void> {
  for (;;) {
    const page = await admin.get('/v1/webhooks?limit=100');
    if (page.status !== 200 || page.body.data.length === 0) return;
    for (const endpoint of page.body.data as { id: string }[]) await admin.delete(`/v1/webhooks/${endpoint.id}`);
  }
}

/** The schedules the run made would go on making runs (some every second) for the rest of the suite. */
async function deleteSchedules(admin: ApiClient): Promise<void> {
  for (;;) {
    const page = await admin.get('/v1/schedules?limit=100');
    if (page.status !== 200 || page.body.data.length === 0) return;
    // Some it made as a Kubernetes resource's: those are deleted as that resource's controller deletes them.
    for (const schedule of page.body.data as { id: string }[])
      await admin.request('DELETE', `/v1/schedules/${schedule.id}`, { headers: { 'agentplane-managed-by': 'kubernetes' } });
  }
}

/**
 * The deliveries started before the endpoints went (hundreds, each retried) end at their next attempt; until
 * they have, they hold the shared worker's webhook queue, and a later suite's delivery would wait behind them.
 */
async function webhookDeliveriesEnded(api: TestApi): Promise<void> {
  await eventually(
    async () => {
      const { count } = await api.services.temporal.workflow.count(
        `WorkflowType = 'webhookDeliveryWorkflow' AND ExecutionStatus = 'Running'`,
      );
      assert.equal(count, 0);
    },
    { timeoutMs: DRAIN_LIMIT_MS, intervalMs: 1_000, message: 'the deliveries to the deleted endpoints did not end' },
  );
}

/** The operations of the document the API serves (`GET /v1/runs`, as schemathesis names them), dealt out to LANES lanes. */
async function laneOperations(api: TestApi): Promise<string[][]> {
  const document = (await (await fetch(`${api.url}/v1/openapi.json`)).json()) as { paths: Record<string, object> };
  const methods = new Set(['get', 'put', 'post', 'patch', 'delete']);
  const operations = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => methods.has(method))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
  return Array.from({ length: LANES }, (_, lane) => operations.filter((_, index) => index % LANES === lane));
}

describe('the API against its OpenAPI document (schemathesis)', () => {
  let api: TestApi;
  let workDir: string;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    workDir = await mkdtemp(join(tmpdir(), 'agentplane-fuzz-'));
  });

  after(async () => {
    await rm(workDir, { recursive: true, force: true });
  });

  it('answers every generated request and sequence as the document says, with every check on', async function () {
    this.timeout(RUN_LIMIT_MS + DRAIN_LIMIT_MS + 60_000);
    const runs = [
      ...(await laneOperations(api)).map((operations, lane) => ({
        name: `fuzz lane ${lane + 1}`,
        phases: 'examples,coverage,fuzzing',
        operations,
      })),
      { name: 'stateful', phases: 'stateful', operations: [] },
    ];
    const found = await Promise.all(runs.map((run) => fuzzAs(run.name, run.phases, run.operations))).finally(() =>
      webhookDeliveriesEnded(api),
    );
    const failed = found.filter((findings) => findings !== undefined);
    assert.deepEqual(failed, [], failed.join('\n'));
  });

  /**
   * One schemathesis run, with a tenant of its own, over `operations` (every one when empty): its findings, or
   * nothing when it found none.
   */
  async function fuzzAs(name: string, phases: string, operations: string[]): Promise<string | undefined> {
    const tenant = await newTenant(api, `contract fuzz, ${name}`);
    const keys = await tenant.admin.get('/v1/api-keys');
    assert.equal(keys.body.data.length, 1, 'a new tenant holds only its admin key');
    const args = [
      `${api.url}/v1/openapi.json`,
      '--checks',
      'all',
      '--phases',
      phases,
      ...operations.flatMap((operation) => ['--include-name', operation]),
      '--header',
      `Authorization: Bearer ${tenant.admin.key}`,
      '--max-examples',
      String(phases === 'stateful' ? MAX_STATEFUL_EXAMPLES : MAX_EXAMPLES),
      '--seed',
      String(SEED),
      '--workers',
      '1',
      '--request-timeout',
      String(REQUEST_TIMEOUT_SECONDS),
      '--max-response-time',
      String(REQUEST_TIMEOUT_SECONDS),
      '--generation-database',
      'none',
      '--no-color',
    ];
    // Schemathesis keeps its state (.hypothesis, .schemathesis) in the working directory: one for each run.
    const cwd = await mkdtemp(join(workDir, 'run-'));
    const env = { ...process.env, SCHEMATHESIS_HOOKS: hooksPath, AGENTPLANE_FUZZ_KEY_ID: keys.body.data[0].id };
    const { code, report } = await runSchemathesis(args, { cwd, env }).finally(async () => {
      await deleteSchedules(tenant.admin);
      await deleteWebhookEndpoints(tenant.admin);
    });
    if (code === 0) return undefined;
    const sections = ['= ERRORS =', '= FAILURES ='].map((title) => report.indexOf(title)).filter((at) => at >= 0);
    const findings = sections.length ? report.slice(report.lastIndexOf('\n', Math.min(...sections)) + 1) : report;
    return `schemathesis (${name}) found problems (st run ${args.join(' ').replace(tenant.admin.key!, '<key>')}):\n${findings}`;
  }
});
