/**
 * `agentplane eval`: runs an experiment through the API, waits for it, prints its summary (and, with a baseline,
 * the comparison), and exits by its gates, for a CI job to stop a change that makes an agent worse.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as wait } from 'node:timers/promises';
import { createAgentplaneClient, type AgentplaneClient, type ScorerSpec } from '../client/agentplane.js';
import { checkGates, GateSyntaxError, needsBaseline, parseGate, type Gate, type GateResult } from './eval-gates.js';
import { comparisonLines, gateLines, summaryLines, type Comparison, type Experiment } from './eval-report.js';

/** The exit codes, which a CI job reads. */
export const EXIT = { passed: 0, gateFailed: 1, usage: 2, experimentFailed: 3, timedOut: 4 } as const;

export const EVAL_USAGE = `Usage: agentplane eval --dataset <id> (--agent <id> | --network <id>) [options]

  --version N         the agent's or network's version to run (default: its current one)
  --model M           run an agent with this model instead of its version's
  --tools replay|live replay: answer tool calls from the dataset items' recorded calls (default); live: call them
  --concurrency N     items run at once (1 to 20, default 4)
  --scorer NAME       a scorer to score items with, by name (repeatable; default: the dataset's); the scorers
                      with options (json_schema, judge) come from the dataset
  --baseline EXP      compare with this finished experiment on the same dataset
  --fail-if "GATE"    fail when GATE holds (repeatable): "<scorer> < 0.8", "cost_usd > 0.05" (total USD),
                      "cost_usd.mean > 0.01" (per item), "latency_ms.p95 > 2000" (also .mean, .p50); with
                      --baseline, "<metric>.difference < -0.05" and "<metric>.ci_high < 0"
  --name TEXT         the experiment's name
  --timeout SECONDS   how long to wait for it to finish (default 1800), a place for it included (a project runs
                      at most 10 experiments at once by default); past it the experiment is cancelled
  --json              print the result as JSON

  The API is AGENTPLANE_API_URL (default http://127.0.0.1:$PORT, PORT 8080) with the key AGENTPLANE_API_KEY (default:
  the admin key \`agentplane dev\` keeps in AGENTPLANE_DATA_DIR).
  Exit codes: 0 every gate passed, 1 a gate failed, 2 usage error, 3 the experiment failed or was cancelled,
  4 it did not finish within --timeout.
`;

class EvalExit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface EvalOptions {
  dataset: string;
  target: { agent_id: string } | { network_id: string };
  version?: number;
  model?: string;
  tools: 'replay' | 'live';
  concurrency: number;
  scorers?: string[];
  baseline?: string;
  gates: Gate[];
  name?: string;
  timeoutSeconds: number;
  json: boolean;
}

export interface EvalResult {
  experiment: Experiment;
  comparison: Comparison | null;
  gates: GateResult[];
  passed: boolean;
}

/** Runs the command and answers its exit code: the result goes to stdout, what went wrong to stderr. */
export async function evalCommand(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const baseUrl = apiUrlOf(env);
  try {
    const options = optionsOf(args);
    const client = createAgentplaneClient({ baseUrl, apiKey: apiKeyOf(env) });
    return await evaluate(client, options);
  } catch (err) {
    // Anything else is the API out of reach (a refused connection, a reset): the experiment could not be run.
    const exit =
      err instanceof EvalExit
        ? err
        : new EvalExit(EXIT.experimentFailed, `could not reach the API at ${baseUrl}: ${(err as Error).message}`);
    console.error(`agentplane eval: ${exit.message}`);
    return exit.code;
  }
}

function optionsOf(args: string[]): EvalOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      options: {
        dataset: { type: 'string' },
        agent: { type: 'string' },
        network: { type: 'string' },
        version: { type: 'string' },
        model: { type: 'string' },
        tools: { type: 'string' },
        concurrency: { type: 'string' },
        scorer: { type: 'string', multiple: true },
        baseline: { type: 'string' },
        'fail-if': { type: 'string', multiple: true },
        name: { type: 'string' },
        timeout: { type: 'string' },
        json: { type: 'boolean' },
      },
    }));
  } catch (err) {
    throw usage((err as Error).message);
  }
  if (!values.dataset) throw usage('--dataset is required.');
  if ((values.agent === undefined) === (values.network === undefined)) throw usage('give --agent or --network, one of them.');
  if (values.model !== undefined && values.network !== undefined)
    throw usage('--model changes an agent; a network runs its members as they are.');
  if (values.tools !== undefined && values.tools !== 'replay' && values.tools !== 'live')
    throw usage(`--tools is replay or live, not '${values.tools}'.`);
  let gates: Gate[];
  try {
    gates = (values['fail-if'] ?? []).map(parseGate);
  } catch (err) {
    if (err instanceof GateSyntaxError) throw usage(err.message);
    throw err;
  }
  const comparing = gates.find(needsBaseline);
  if (comparing && !values.baseline) throw usage(`--fail-if '${comparing.text}' reads the comparison: give --baseline.`);
  return {
    dataset: values.dataset,
    target: values.agent !== undefined ? { agent_id: values.agent } : { network_id: values.network! },
    version: values.version === undefined ? undefined : whole('version', values.version, 1, 2_147_483_647),
    model: values.model,
    tools: (values.tools ?? 'replay') as EvalOptions['tools'],
    concurrency: values.concurrency === undefined ? 4 : whole('concurrency', values.concurrency, 1, 20),
    scorers: values.scorer,
    baseline: values.baseline,
    gates,
    name: values.name,
    timeoutSeconds: values.timeout === undefined ? 1_800 : whole('timeout', values.timeout, 1, 86_400),
    json: values.json ?? false,
  };
}

function whole(option: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max)
    throw usage(`--${option} must be a whole number from ${min} to ${max}, not '${text}'.`);
  return value;
}

const usage = (message: string) => new EvalExit(EXIT.usage, `${message}\n\n${EVAL_USAGE}`);

function apiUrlOf(env: NodeJS.ProcessEnv): string {
  return env.AGENTPLANE_API_URL || `http://127.0.0.1:${env.PORT || 8080}`;
}

function apiKeyOf(env: NodeJS.ProcessEnv): string {
  if (env.AGENTPLANE_API_KEY) return env.AGENTPLANE_API_KEY;
  const keyFile = join(env.AGENTPLANE_DATA_DIR || '.agentplane', 'admin-key');
  if (existsSync(keyFile)) return readFileSync(keyFile, 'utf8').trim();
  throw usage('set AGENTPLANE_API_KEY to an API key with the experiments:write and agents:run scopes.');
}

async function evaluate(client: AgentplaneClient, options: EvalOptions): Promise<number> {
  if (options.baseline) await checkBaseline(client, options);
  const started = Date.now();
  const deadline = started + options.timeoutSeconds * 1_000;
  const created = await placed(deadline, () =>
    client.POST('/v1/experiments', {
      body: {
        dataset_id: options.dataset,
        ...options.target,
        ...(options.name !== undefined && { name: options.name }),
        ...(options.version !== undefined && { version: options.version }),
        ...(options.model !== undefined && { overrides: { model: options.model } }),
        tools: options.tools,
        concurrency: options.concurrency,
        // By name: the API names a scorer it does not know, or one that needs options (400).
        ...(options.scorers !== undefined && { scorers: options.scorers as ScorerSpec[] }),
      },
    }),
  );
  if (!created.data) throw refused('POST /v1/experiments', created.response.status, created.error);
  const experiment = await finished(client, created.data, deadline);
  const seconds = (Date.now() - started) / 1_000;
  if (experiment.status !== 'completed') {
    report(options, { experiment, comparison: null, gates: [], passed: false }, seconds);
    // Said on stderr too, where a CI log shows why the job stopped, whatever stdout holds (the report, or --json).
    const why = experiment.error ? ` (${experiment.error.code}: ${experiment.error.message})` : '';
    throw new EvalExit(EXIT.experimentFailed, `${experiment.id} ended ${experiment.status}${why}; its gates were not checked.`);
  }
  const comparison = options.baseline ? await compare(client, experiment.id, options.baseline) : null;
  const gates = checkGates(options.gates, {
    summary: experiment.summary,
    completed: experiment.item_counts.completed,
    comparison: comparison?.metrics,
  });
  const passed = gates.every((gate) => !gate.failed);
  report(options, { experiment, comparison, gates, passed }, seconds);
  return passed ? EXIT.passed : EXIT.gateFailed;
}

/** The baseline is checked before anything is spent: it must be there, finished, and of the same dataset. */
async function checkBaseline(client: AgentplaneClient, options: EvalOptions): Promise<void> {
  const { data, error, response } = await client.GET('/v1/experiments/{id}', { params: { path: { id: options.baseline! } } });
  if (!data)
    throw response.status === 404
      ? usage(`there is no experiment ${options.baseline} to compare with.`)
      : refused('GET the baseline', response.status, error);
  if (data.dataset_id !== options.dataset)
    throw usage(
      `the baseline ${data.id} ran the dataset ${data.dataset_id}, not ${options.dataset}: experiments compare on the same dataset.`,
    );
  if (data.status === 'queued' || data.status === 'running')
    throw usage(`the baseline ${data.id} is still ${data.status}; wait for it to finish.`);
}

/**
 * Asks for the experiment again while the project has all the experiments it may have at once (429
 * `concurrent_experiments_exceeded`), after the Retry-After it is given, until the deadline: CI jobs of one project
 * that start together take the places in turn rather than fail.
 */
async function placed<T extends { error?: unknown; response: Response }>(deadline: number, create: () => Promise<T>): Promise<T> {
  let told = false;
  for (;;) {
    const created = await create();
    const code = (created.error as { error?: { code?: string } } | undefined)?.error?.code;
    if (created.response.status !== 429 || code !== 'concurrent_experiments_exceeded') return created;
    if (!told) {
      process.stderr.write(`agentplane eval: ${(created.error as { error: { message: string } }).error.message} Waiting for a place.\n`);
      told = true;
    }
    const retryAfter = Math.max(1, Number(created.response.headers.get('retry-after')) || 30) * 1_000;
    if (Date.now() + retryAfter >= deadline)
      throw new EvalExit(EXIT.timedOut, 'the project had no place for the experiment within --timeout; nothing was run.');
    await wait(retryAfter);
  }
}

/** Polls the experiment until it ends, every half second at first and then less often, up to every 5 s. */
async function finished(client: AgentplaneClient, experiment: Experiment, deadline: number): Promise<Experiment> {
  let current = experiment;
  let delay = 500;
  while (current.status === 'queued' || current.status === 'running') {
    if (Date.now() >= deadline) {
      await client.POST('/v1/experiments/{id}/cancel', { params: { path: { id: current.id } } });
      throw new EvalExit(
        EXIT.timedOut,
        `${current.id} did not finish in time (${current.item_counts.completed} of ${current.item_counts.total} items done); it was cancelled.`,
      );
    }
    await wait(Math.min(delay, Math.max(0, deadline - Date.now())));
    delay = Math.min(delay * 1.5, 5_000);
    const { data, error, response } = await client.GET('/v1/experiments/{id}', { params: { path: { id: current.id } } });
    if (!data) throw refused(`GET /v1/experiments/${current.id}`, response.status, error);
    current = data;
  }
  return current;
}

async function compare(client: AgentplaneClient, id: string, baseline: string): Promise<Comparison> {
  const { data, error, response } = await client.GET('/v1/experiments/{id}/comparison', { params: { path: { id }, query: { baseline } } });
  if (!data) throw refused('GET the comparison', response.status, error);
  return data;
}

/** The API refused: the request's fault (4xx but 429) is a usage error; anything else, the experiment could not run. */
function refused(what: string, status: number, error: unknown): EvalExit {
  const message = (error as { error?: { message?: string } } | undefined)?.error?.message ?? `status ${status}`;
  const code = status >= 400 && status < 500 && status !== 429 ? EXIT.usage : EXIT.experimentFailed;
  return new EvalExit(code, `${what} answered ${status}: ${message}`);
}

function report(options: EvalOptions, result: EvalResult, seconds: number): void {
  if (options.json) {
    console.log(JSON.stringify(result, null, 2));
    return;
  }
  const lines = summaryLines(result.experiment, seconds);
  if (result.comparison) lines.push('', ...comparisonLines(result.comparison));
  const gates = gateLines(result.gates);
  if (gates.length > 0) lines.push('', ...gates);
  if (result.experiment.status === 'completed') lines.push('', result.passed ? 'Every gate passed.' : 'A gate failed.');
  console.log(lines.join('\n'));
}
