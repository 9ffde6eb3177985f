/**
 * The experiments benchmark: an experiment of 200 items with replayed tools, against the same 200 runs made
 * directly. The direct runs each call an HTTP tool on loopback; the dataset is made from those runs (each item keeps
 * its run's input and tool calls), and the experiment runs it with `tools: replay`, so every tool call is answered
 * from the recording and none reaches the tool. Both sides run as many at once, with the API and worker measured
 * alike: what an experiment adds to running the same runs is its workflow, its items' bookkeeping and scoring.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callApi, type BenchTarget } from './stack.js';
import { cpuMs } from './proc.js';
import { BENCH_MODEL } from './runs.js';
import { ordering } from '../test/support/model-servers/prompted.js';
import { createDb, type Db } from '../records/db.js';
import { createLogger } from '../cli/runtime.js';
import { addItems, createDataset, snapshotOfRun, type NewDatasetItem } from '../records/datasets.js';
import { runById } from '../records/runs.js';

export interface ExperimentSettings {
  items: number;
  /** Runs at once, on each side: the experiment's `concurrency`, and as many direct clients. */
  concurrency: number;
  timeoutSeconds: number;
}

export interface BatchFigures {
  runs: number;
  seconds: number;
  runsPerSecond: number;
  /** CPU time per run of the API and of the worker, and the two together, in milliseconds. */
  cpuMsPerRun: { api: number; worker: number; total: number };
}

export interface ExperimentFigures {
  direct: BatchFigures;
  experiment: BatchFigures;
  /** Experiment ÷ direct: wall time, and API and worker CPU time per run. */
  ratio: { wallTime: number; cpuPerRun: number };
  /** Tool calls that reached the tool while the experiment ran: 0 when replay answered them all. */
  toolCallsDuringExperiment: number;
}

export interface ExperimentTarget extends BenchTarget {
  apiPid: number;
  workerPid: number;
}

/** A tool that answers every call at once, counting them. */
async function startLookupTool(): Promise<{ url: string; calls(): number; close(): Promise<void> }> {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    calls++;
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"price":"4.20"}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/lookup`,
    calls: () => calls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const round = (value: number, places = 1) => Math.round(value * 10 ** places) / 10 ** places;

/** Times `work` and the API's and worker's CPU over it, per run. */
async function batch(target: ExperimentTarget, runs: number, work: () => Promise<void>): Promise<BatchFigures> {
  const cpuBefore = { api: cpuMs(target.apiPid), worker: cpuMs(target.workerPid) };
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const api = (cpuMs(target.apiPid) - cpuBefore.api) / runs;
  const worker = (cpuMs(target.workerPid) - cpuBefore.worker) / runs;
  return {
    runs,
    seconds: round(seconds, 2),
    runsPerSecond: round(runs / seconds),
    cpuMsPerRun: { api: round(api), worker: round(worker), total: round(api + worker) },
  };
}

export async function measureExperiments(target: ExperimentTarget, settings: ExperimentSettings): Promise<ExperimentFigures> {
  const tool = await startLookupTool();
  const db = createDb(target.databaseUrl, { max: 1, log: createLogger('warn') });
  try {
    const api = (path: string, init?: RequestInit) => callApi(`${target.apiUrl}${path}`, target.adminKey, init);
    const agent = await api('/v1/agents', {
      method: 'POST',
      body: JSON.stringify({ name: 'experiments bench', model: BENCH_MODEL, tools: [{ type: 'http', name: 'lookup', url: tool.url }] }),
    });
    const runIds: string[] = [];
    const runOne = async (item: number) => {
      const run = await api(`/v1/agents/${agent.id}/run`, {
        method: 'POST',
        body: JSON.stringify({ input: ordering({ call: { name: 'lookup', arguments: { item } } }) }),
      });
      if (run.status !== 'completed') throw new Error(`a direct run ended ${run.status}: ${JSON.stringify(run).slice(0, 500)}`);
      runIds[item] = run.id;
    };
    // A few first, so that neither side pays for the first runs' warm-up.
    for (let i = 0; i < settings.concurrency; i++) await runOne(settings.items + i);

    let next = 0;
    const direct = await batch(target, settings.items, () =>
      Promise.all(
        Array.from({ length: settings.concurrency }, async () => {
          for (let item = next++; item < settings.items; item = next++) await runOne(item);
        }),
      ).then(() => undefined),
    );
    if (tool.calls() < settings.items) throw new Error(`the direct runs made ${tool.calls()} tool calls, not ${settings.items}`);

    const datasetId = await datasetOfRuns(db, runIds.slice(0, settings.items));
    const callsBefore = tool.calls();
    let ended: { status: string; item_counts: { completed: number }; error: unknown } | undefined;
    const experiment = await batch(target, settings.items, async () => {
      const created = await api('/v1/experiments', {
        method: 'POST',
        body: JSON.stringify({
          dataset_id: datasetId,
          agent_id: agent.id,
          tools: 'replay',
          concurrency: settings.concurrency,
          scorers: ['completion'],
        }),
      });
      const deadline = Date.now() + settings.timeoutSeconds * 1000;
      for (;;) {
        ended = await api(`/v1/experiments/${created.id}`);
        if (ended!.status !== 'queued' && ended!.status !== 'running') return;
        if (Date.now() > deadline) throw new Error(`the experiment was still ${ended!.status} after ${settings.timeoutSeconds} s`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    });
    if (ended!.status !== 'completed' || ended!.item_counts.completed !== settings.items)
      throw new Error(
        `the experiment ended ${ended!.status} with ${ended!.item_counts.completed} items completed: ${JSON.stringify(ended!.error)}`,
      );
    return {
      direct,
      experiment,
      ratio: {
        wallTime: round(experiment.seconds / direct.seconds, 2),
        cpuPerRun: round(experiment.cpuMsPerRun.total / direct.cpuMsPerRun.total, 2),
      },
      toolCallsDuringExperiment: tool.calls() - callsBefore,
    };
  } finally {
    await db.end();
    await tool.close();
  }
}

/** A dataset of the runs, each item its run's input and recorded tool calls, as `from_run_id` makes it. */
async function datasetOfRuns(db: Db, runIds: string[]): Promise<string> {
  const items: NewDatasetItem[] = [];
  let projectId: string | undefined;
  for (const id of runIds) {
    const run = await runById(db, id);
    const snapshot = run && (await snapshotOfRun(db, run));
    if (!run || !snapshot) throw new Error(`the run ${id} has no snapshot to make an item of`);
    projectId = run.project_id;
    items.push({ input: snapshot.input, fileIds: snapshot.fileIds, metadata: {}, sourceRunId: id, toolCalls: snapshot.toolCalls });
  }
  const dataset = await createDataset(db, projectId!, { name: 'experiments bench', description: '', metadata: {}, scorers: [] });
  await addItems(db, dataset, items);
  return dataset.id;
}
