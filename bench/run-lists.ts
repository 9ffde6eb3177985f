/**
 * The run list benchmark: `GET /v1/runs?limit=100` over 100 runs whose tool calls each answered 1 MiB (the
 * most an HTTP tool may return), against the same list over 100 runs whose tool results are 10 bytes. What
 * is measured is the API process's resident memory during the request (VmRSS sampled every 20 ms, and
 * VmHWM) and the size of the answer: a list carries step counts and totals, never the steps, so both should
 * be alike. Goal: the large runs' list raises the API's RSS by less than 64 MB.
 */
import { createLogger } from '../cli/runtime.js';
import { createDb } from '../records/db.js';
import { addBulkyCopies } from '../test/support/run-steps.js';
import { watchRss } from './proc.js';
import { BENCH_MODEL } from './runs.js';
import { callApi as call, type BenchTarget } from './stack.js';

const RUNS = 100;
const LARGE_OUTPUT_BYTES = 1024 * 1024;
const SMALL_OUTPUT_BYTES = 10;

export interface ListFigures {
  /** The answer's size in bytes. */
  bytes: number;
  /** The API's peak RSS during the request minus its RSS before it, in MB; the largest of the samples. */
  rssGrowthMb: number;
}

export interface RunListFigures {
  runs: number;
  outputBytes: number;
  large: ListFigures;
  small: ListFigures;
}

interface Target extends BenchTarget {
  apiPid: number;
}

/** A project with `RUNS` finished runs, each with one tool result of `outputBytes`; its admin key. */
async function projectWithRuns(target: Target, db: ReturnType<typeof createDb>, outputBytes: number): Promise<string> {
  const project = await call(`${target.apiUrl}/v1/projects`, target.adminKey, {
    method: 'POST',
    body: JSON.stringify({ name: `run lists ${outputBytes}` }),
  });
  const { key } = await call(`${target.apiUrl}/v1/api-keys`, target.adminKey, {
    method: 'POST',
    body: JSON.stringify({ name: 'lister', scopes: ['admin'], project_id: project.id }),
  });
  const agent = await call(`${target.apiUrl}/v1/agents`, key, {
    method: 'POST',
    body: JSON.stringify({ name: 'lister', model: BENCH_MODEL }),
  });
  const run = await call(`${target.apiUrl}/v1/agents/${agent.id}/run`, key, { method: 'POST', body: JSON.stringify({ input: 'hello' }) });
  await addBulkyCopies(db, run.id, RUNS - 1, outputBytes);
  return key;
}

async function listOnce(target: Target, key: string): Promise<ListFigures> {
  const rss = watchRss(target.apiPid);
  const response = await fetch(`${target.apiUrl}/v1/runs?limit=${RUNS}`, { headers: { authorization: `Bearer ${key}` } });
  const bytes = (await response.arrayBuffer()).byteLength;
  const { growthMb } = rss.stop();
  if (!response.ok) throw new Error(`GET /v1/runs answered ${response.status}`);
  return { bytes, rssGrowthMb: growthMb };
}

async function measureList(target: Target, key: string, samples: number): Promise<ListFigures> {
  const figures: ListFigures[] = [];
  for (let i = 0; i < samples; i++) figures.push(await listOnce(target, key));
  return { bytes: figures[0]!.bytes, rssGrowthMb: Math.max(...figures.map((f) => f.rssGrowthMb)) };
}

export async function measureRunLists(target: Target, samples = 3): Promise<RunListFigures> {
  const db = createDb(target.databaseUrl, { max: 1, log: createLogger('warn') });
  try {
    const smallKey = await projectWithRuns(target, db, SMALL_OUTPUT_BYTES);
    const largeKey = await projectWithRuns(target, db, LARGE_OUTPUT_BYTES);
    const small = await measureList(target, smallKey, samples);
    const large = await measureList(target, largeKey, samples);
    return { runs: RUNS, outputBytes: LARGE_OUTPUT_BYTES, large, small };
  } finally {
    await db.end();
  }
}
