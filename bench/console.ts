/**
 * The console benchmark, in Debian's Chromium driven by playwright-core, signed in as a person would be:
 * - the run view of a run with 2,000 steps, from navigation start to the view's `agentplane:run-rendered`
 *   mark (all steps read and drawn), against the same view of a run with 20 steps: virtualised, the larger run
 *   should cost little more than the time to fetch its larger JSON; and to its `agentplane:run-first-rows`
 *   mark (its first steps drawn, the rest still being read);
 * - the costs page over 90 daily buckets × 20 agents, to its `agentplane:costs-rendered` mark (the chart
 *   drawn);
 * each against the baseline of the API requests that render made, made again from the same page one after
 * another (the data alone, without drawing it). And the bundle: the initial script and all of it, gzipped,
 * as the build measured them.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { createLogger } from '../cli/runtime.js';
import { createDb, type Db } from '../records/db.js';
import { CHROMIUM } from '../test/support/browser.js';
import { addSteps } from '../test/support/run-steps.js';
import { BENCH_MODEL, latencyOf, type LatencyFigures } from './runs.js';
import { callApi as call, type BenchTarget } from './stack.js';

export const MANY_STEPS = 2_000;
export const FEW_STEPS = 20;
export const COST_DAYS = 90;
export const COST_AGENTS = 20;
const DAY = 86_400;

export interface ConsoleSettings {
  warmups: number;
  samples: number;
}

export interface RenderFigures {
  /** Navigation start to the view's mark. */
  render: LatencyFigures;
  /** The API requests of that render, made again from the page one after another. */
  data: LatencyFigures;
  requests: number;
  /** Navigation start to the view's first drawing, where it draws in parts. */
  firstDrawn?: LatencyFigures;
}

export interface ConsoleFigures {
  bundle: { initial_js_gzip_bytes: number; all_js_gzip_bytes: number; budget_bytes: number };
  manySteps: RenderFigures & { domRows: number };
  fewSteps: RenderFigures;
  costs: RenderFigures;
}

/** A completed one-step run of a new agent, grown to `steps` steps. */
async function runWithSteps(target: BenchTarget, key: string, db: Db, steps: number): Promise<string> {
  const agent = await call(`${target.apiUrl}/v1/agents`, key, {
    method: 'POST',
    body: JSON.stringify({ name: `bench ${steps}`, model: BENCH_MODEL, instructions: 'Answer briefly.' }),
  });
  // The API answers when the run has ended.
  const run = await call(`${target.apiUrl}/v1/agents/${agent.id}/run`, key, { method: 'POST', body: JSON.stringify({ input: 'Hello' }) });
  if (run.status !== 'completed') throw new Error(`the run ended ${run.status}: ${JSON.stringify(run.error)}`);
  if (steps > 1) await addSteps(db, run.id, steps);
  return run.id;
}

/** When the page made the performance mark `name`, in ms from navigation start. */
const markedAt = (page: Page, name: string) => page.evaluate((mark) => performance.getEntriesByName(mark)[0]!.startTime, name);

/** Opens `path` under the console `samples` times, each from navigation start to `mark`. */
async function rendering(
  page: Page,
  consoleUrl: string,
  path: string,
  mark: string,
  settings: ConsoleSettings,
  firstMark?: string,
): Promise<RenderFigures & { domRows: number }> {
  const ms: number[] = [];
  const firstMs: number[] = [];
  let requests: string[] = [];
  let domRows = 0;
  for (let i = 0; i < settings.warmups + settings.samples; i++) {
    const made: string[] = [];
    const listener = (request: { url(): string; resourceType(): string }) => {
      if (request.resourceType() === 'fetch' && new URL(request.url()).pathname.includes('/v1/')) made.push(request.url());
    };
    page.on('request', listener);
    await page.goto(consoleUrl + path);
    await page.waitForFunction((name) => performance.getEntriesByName(name).length > 0, mark, { timeout: 60_000 });
    page.off('request', listener);
    if (i >= settings.warmups) {
      ms.push(await markedAt(page, mark));
      if (firstMark) firstMs.push(await markedAt(page, firstMark));
    }
    requests = made;
    domRows = await page.locator('[role="row"], tr').count();
  }
  const data: number[] = [];
  for (let i = 0; i < settings.samples; i++) {
    data.push(
      await page.evaluate(async (urls) => {
        const started = performance.now();
        for (const url of urls) await (await fetch(url)).json();
        return performance.now() - started;
      }, requests),
    );
  }
  return {
    render: latencyOf(ms),
    data: latencyOf(data),
    requests: requests.length,
    domRows,
    ...(firstMark && { firstDrawn: latencyOf(firstMs) }),
  };
}

export async function measureConsole(target: BenchTarget, settings: ConsoleSettings): Promise<ConsoleFigures> {
  const bundle = JSON.parse(await readFile(fileURLToPath(new URL('../console/bundle-size.json', import.meta.url)), 'utf8'));
  const project = await call(`${target.apiUrl}/v1/projects`, target.adminKey, {
    method: 'POST',
    body: JSON.stringify({ name: 'console bench' }),
  });
  const { key } = await call(`${target.apiUrl}/v1/api-keys`, target.adminKey, {
    method: 'POST',
    body: JSON.stringify({ name: 'console', scopes: ['admin'], project_id: project.id }),
  });
  const db = createDb(target.databaseUrl, { max: 1, log: createLogger('warn') });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  try {
    const many = await runWithSteps(target, key, db, MANY_STEPS);
    const few = await runWithSteps(target, key, db, FEW_STEPS);
    // One call per agent and day over 90 days.
    const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
    await db.query(
      `INSERT INTO usage_records (id, project_id, source, agent_id, model, provider, price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
       SELECT 'usage_console_' || a || '_' || d, $1, 'run', 'agent_console' || lpad(a::text, 2, '0'), 'gpt-4.1-mini', 'openai', 'bench', 100, 10, 0,
         (a + 1) * (d + 1) / 1000000.0, '{}', to_timestamp($2 - d * $3 + 3600)
       FROM generate_series(0, $4 - 1) a, generate_series(0, $5 - 1) d`,
      [project.id, today, DAY, COST_AGENTS, COST_DAYS],
    );

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const consoleUrl = `${target.apiUrl}/console/`;
    await page.goto(consoleUrl);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Console' }).waitFor();

    const isoDay = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);
    const manySteps = await rendering(page, consoleUrl, `runs/${many}`, 'agentplane:run-rendered', settings, 'agentplane:run-first-rows');
    const { domRows: _fewRows, ...fewSteps } = await rendering(page, consoleUrl, `runs/${few}`, 'agentplane:run-rendered', settings);
    const { domRows: _costRows, ...costs } = await rendering(
      page,
      consoleUrl,
      `costs?from=${isoDay(today - (COST_DAYS - 1) * DAY)}&to=${isoDay(today)}&width=1d&group=agent_id`,
      'agentplane:costs-rendered',
      settings,
    );
    return { bundle, manySteps, fewSteps, costs };
  } finally {
    await browser.close();
    await db.end();
  }
}
