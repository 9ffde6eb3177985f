/**
 * The capacity benchmark: what one core of each component does, from CPU time measured under load, and
 * what that asks of a deployment at 10, 100 and 1,000 runs a second.
 *
 * Runs: 16 clients making one-step runs back to back (bench/runs.ts), CPU time per run of the API, the worker,
 * Temporal and PostgreSQL. Reads: the API's main reads by 16 keep-alive connections (autocannon), CPU time per
 * request of the API and of PostgreSQL. A component's runs (or requests) per core is 1,000 ms ÷ its CPU ms per
 * run; the cores a rate asks of it are rate × CPU ms ÷ 1,000, at 70 % utilisation (the chart's autoscaling
 * target).
 */
import autocannon from 'autocannon';
import { cpuMs, descendantsCpuMs } from './proc.js';
import { BENCH_MODEL, measureRuns, type RunTarget } from './runs.js';

export const CAPACITY_RATES = [10, 100, 1_000];
/** The CPU utilisation the chart's autoscaling aims at: a sized component runs at most this busy. */
export const TARGET_UTILISATION = 0.7;
const COMPONENTS = ['api', 'worker', 'temporal', 'postgres'] as const;

export interface CapacitySettings {
  connections: number;
  seconds: number;
  runSeconds: number;
}

export interface EndpointCapacity {
  endpoint: string;
  requestsPerSecond: number;
  apiCpuUsPerRequest: number;
  postgresCpuUsPerRequest: number;
  /** Requests a second one API core serves: 1,000,000 µs ÷ the API's CPU µs per request. */
  perApiCore: number;
}

export interface CapacityFigures {
  runs: { runsPerSecond: number; cpuMsPerRun: Record<string, number> };
  /** Runs a second one core of each component sustains. */
  runsPerCore: Record<string, number>;
  /** Cores each component needs at each rate, at the target utilisation. */
  cores: Record<number, Record<string, number>>;
  /** The component that needs the most cores per run: the first to saturate on equal cores. */
  firstToSaturate: string;
  endpoints: EndpointCapacity[];
}

const postgresCpuMs = () =>
  [...descendantsCpuMs(process.pid).values()].filter((p) => p.name === 'postgres').reduce((sum, p) => sum + p.ms, 0);

async function endpointCapacity(
  endpoint: string,
  url: string,
  apiPid: number,
  headers: Record<string, string>,
  settings: CapacitySettings,
): Promise<EndpointCapacity> {
  const load = async (seconds: number) => {
    const result = await autocannon({ url, headers, connections: settings.connections, duration: seconds, timeout: 10 });
    const failures = result.non2xx + result.errors + result.timeouts;
    if (failures > 0) throw new Error(`${endpoint}: ${failures} of ${result['2xx'] + failures} requests failed`);
    return result;
  };
  await load(2);
  const [apiBefore, postgresBefore] = [cpuMs(apiPid), postgresCpuMs()];
  const result = await load(settings.seconds);
  const served = result['2xx'];
  const apiCpuUsPerRequest = ((cpuMs(apiPid) - apiBefore) * 1000) / served;
  return {
    endpoint,
    requestsPerSecond: Math.round(served / result.duration),
    apiCpuUsPerRequest: Math.round(apiCpuUsPerRequest),
    postgresCpuUsPerRequest: Math.round(((postgresCpuMs() - postgresBefore) * 1000) / served),
    perApiCore: Math.round(1_000_000 / apiCpuUsPerRequest),
  };
}

export async function measureCapacity(target: RunTarget, settings: CapacitySettings): Promise<CapacityFigures> {
  const auth = { authorization: `Bearer ${target.adminKey}` };
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${target.apiUrl}${path}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`POST ${path} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as { id: string };
  };

  const { throughput } = await measureRuns(target, {
    warmups: 5,
    samples: 5,
    concurrency: 16,
    warmupSeconds: 3,
    seconds: settings.runSeconds,
  });
  const perRun = (component: string) => throughput.cpuMsPerRun[component] ?? 0;
  const runsPerCore = Object.fromEntries(COMPONENTS.map((c) => [c, Math.round(1000 / perRun(c))]));
  const cores = Object.fromEntries(
    CAPACITY_RATES.map((rate) => [
      rate,
      Object.fromEntries(COMPONENTS.map((c) => [c, Math.round(((rate * perRun(c)) / 1000 / TARGET_UTILISATION) * 10) / 10])),
    ]),
  );
  const firstToSaturate = [...COMPONENTS].sort((a, b) => perRun(b) - perRun(a))[0]!;

  const file = await fetch(`${target.apiUrl}/v1/files`, {
    method: 'POST',
    headers: auth,
    body: (() => {
      const form = new FormData();
      form.append('purpose', 'attachment');
      form.append('file', new Blob(['capacity']), 'capacity.txt');
      return form;
    })(),
  }).then(async (response) => {
    if (!response.ok) throw new Error(`POST /v1/files answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as { id: string };
  });
  const agent = await post('/v1/agents', { name: 'capacity', instructions: 'Answer.', model: BENCH_MODEL });
  const run = await post(`/v1/agents/${agent.id}/run`, { input: 'Hello.' });
  const endpoints: EndpointCapacity[] = [];
  for (const [endpoint, path] of [
    ['GET /v1/files/{id}', `/v1/files/${file.id}`],
    ['GET /v1/agents/{id}', `/v1/agents/${agent.id}`],
    ['GET /v1/runs/{id}', `/v1/runs/${run.id}`],
    ['GET /v1/runs?limit=20', '/v1/runs?limit=20'],
  ] as const)
    endpoints.push(await endpointCapacity(endpoint, `${target.apiUrl}${path}`, target.apiPid, auth, settings));

  return {
    runs: {
      runsPerSecond: Math.round(throughput.runsPerSecond * 10) / 10,
      cpuMsPerRun: Object.fromEntries(COMPONENTS.map((c) => [c, perRun(c)])),
    },
    runsPerCore,
    cores,
    firstToSaturate,
    endpoints,
  };
}
