/**
 * The runs benchmark: what orchestrating a run (API, PostgreSQL, Temporal, worker) adds to the one model
 * call it makes, against that same call made straight to the same loopback model server with the
 * `openai` SDK; then how many runs a second the stack sustains with clients waiting on them side by side.
 */
import { cpus } from 'node:os';
import OpenAI from 'openai';
import { cpuMs, descendantsCpuMs, machineCpuMs } from './proc.js';

/** The model the loopback server serves, and its reply to every request (bench/model-server.ts). */
export const BENCH_MODEL = 'bench-model';
export const BENCH_REPLY = ['The ', 'answer ', 'is ', '42.'];
const QUESTION = 'What is the answer?';

export interface RunSettings {
  /** Runs (and direct calls) made one after another before measuring, then measured. */
  warmups: number;
  samples: number;
  /** Clients, each starting its next run when its last one has answered. */
  concurrency: number;
  warmupSeconds: number;
  seconds: number;
}

export interface LatencyFigures {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

export interface ThroughputFigures extends LatencyFigures {
  concurrency: number;
  seconds: number;
  runsPerSecond: number;
  /**
   * CPU time per completed run, in milliseconds, by process: the API, the worker, the model server, this
   * process (the clients), the others this benchmark started by command name (temporal, postgres), and
   * the whole machine's (which counts whatever else ran on it too).
   */
  cpuMsPerRun: Record<string, number>;
  /** The share of the machine's CPU time that was busy during the window (every core counted). */
  machineBusy: number;
  /**
   * The runs a second the machine's cores could sustain at the CPU time per run of the processes this
   * benchmark started (the stack, the model server and the clients): what runs/s would be with the
   * machine to itself, as long as CPU is what bounds it.
   */
  cpuBoundRunsPerSecond: number;
}

export interface RunFigures {
  direct: LatencyFigures;
  run: LatencyFigures;
  throughput: ThroughputFigures;
}

export interface RunTarget {
  apiUrl: string;
  apiPid: number;
  workerPid: number;
  modelPid: number;
  modelUrl: string;
  adminKey: string;
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function latencyOf(ms: number[]): LatencyFigures {
  const sorted = [...ms].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    samples: sorted.length,
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    meanMs: round(sorted.reduce((sum, n) => sum + n, 0) / sorted.length),
  };
}

export async function timed(work: () => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/**
 * Two ways of doing one thing, each returning how long it took (ms), done one after the other in turns so that
 * both meet the same machine; the warm-ups are left out of the samples.
 */
export async function samplesInTurns(
  settings: { warmups: number; samples: number },
  first: () => Promise<number>,
  second: () => Promise<number>,
): Promise<[number[], number[]]> {
  const firsts: number[] = [];
  const seconds: number[] = [];
  for (let i = 0; i < settings.warmups + settings.samples; i++) {
    const a = await first();
    const b = await second();
    if (i >= settings.warmups) {
      firsts.push(a);
      seconds.push(b);
    }
  }
  return [firsts, seconds];
}

async function sequentially(settings: RunSettings, work: () => Promise<void>): Promise<LatencyFigures> {
  for (let i = 0; i < settings.warmups; i++) await work();
  const ms: number[] = [];
  for (let i = 0; i < settings.samples; i++) ms.push(await timed(work));
  return latencyOf(ms);
}

/** The baseline: the model call a run makes, streamed as the platform's gateway streams it. */
function directCall(modelUrl: string): () => Promise<void> {
  const client = new OpenAI({ baseURL: modelUrl, apiKey: 'unused', maxRetries: 0 });
  const expected = BENCH_REPLY.join('');
  return async () => {
    const stream = await client.chat.completions.create({
      model: BENCH_MODEL,
      messages: [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: QUESTION },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    if (text !== expected) throw new Error(`the model server answered ${JSON.stringify(text)}`);
  };
}

async function createAgent(target: RunTarget): Promise<string> {
  const response = await fetch(`${target.apiUrl}/v1/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${target.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', model: BENCH_MODEL, instructions: 'Answer briefly.' }),
  });
  const body = (await response.json()) as { id?: string };
  if (response.status !== 201 || !body.id) throw new Error(`POST /v1/agents answered ${response.status}: ${JSON.stringify(body)}`);
  return body.id;
}

/** One run, waited for; anything but a run completed with the model's reply is a failure to measure. */
function runOnce(target: RunTarget, agentId: string): () => Promise<void> {
  const expected = BENCH_REPLY.join('');
  return async () => {
    const response = await fetch(`${target.apiUrl}/v1/agents/${agentId}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: QUESTION }),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`POST /v1/agents/${agentId}/run answered ${response.status}: ${text.slice(0, 500)}`);
    const run = JSON.parse(text) as { status: string; output?: { text: string } };
    if (run.status !== 'completed' || run.output?.text !== expected) throw new Error(`a run ended ${run.status}: ${text.slice(0, 500)}`);
  };
}

/** CPU time so far by process, as ThroughputFigures.cpuMsPerRun names them. */
function cpuByProcess(target: RunTarget): Record<string, number> {
  const roles = new Map([
    [target.apiPid, 'api'],
    [target.workerPid, 'worker'],
    [target.modelPid, 'model server'],
  ]);
  const usage = process.cpuUsage();
  const byProcess: Record<string, number> = { api: 0, worker: 0, 'model server': 0, 'bench clients': (usage.user + usage.system) / 1000 };
  for (const [pid, { name, ms }] of descendantsCpuMs(process.pid)) {
    const role = roles.get(pid) ?? name;
    byProcess[role] = (byProcess[role] ?? 0) + ms;
  }
  return byProcess;
}

/** `concurrency` clients making runs back to back for `seconds`; runs answered after the window are not counted. */
async function sustained(target: RunTarget, run: () => Promise<void>, concurrency: number, seconds: number): Promise<ThroughputFigures> {
  const ms: number[] = [];
  const windowEnd = Date.now() + seconds * 1000;
  const snapshot = () => ({ processes: cpuByProcess(target), machine: machineCpuMs() });
  const before = snapshot();
  let after: typeof before | undefined;
  const closing = new Promise<void>((resolve) =>
    setTimeout(() => {
      after = snapshot();
      resolve();
    }, seconds * 1000),
  );
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < windowEnd) {
        const took = await timed(run);
        if (Date.now() <= windowEnd) ms.push(took);
      }
    }),
  );
  await closing;
  const completed = ms.length;
  const cpuMsPerRun: Record<string, number> = {};
  for (const [name, total] of Object.entries(after!.processes)) {
    const used = total - (before.processes[name] ?? 0);
    if (used > 0) cpuMsPerRun[name] = Math.round((used / completed) * 10) / 10;
  }
  const ours = Object.values(cpuMsPerRun).reduce((sum, ms) => sum + ms, 0);
  const machineBusy = after!.machine.busy - before.machine.busy;
  cpuMsPerRun.machine = Math.round((machineBusy / completed) * 10) / 10;
  return {
    concurrency,
    seconds,
    runsPerSecond: completed / seconds,
    ...latencyOf(ms),
    cpuMsPerRun,
    machineBusy: machineBusy / (after!.machine.total - before.machine.total),
    cpuBoundRunsPerSecond: (cpus().length * 1000) / ours,
  };
}

export async function measureRuns(target: RunTarget, settings: RunSettings): Promise<RunFigures> {
  const agentId = await createAgent(target);
  const run = runOnce(target, agentId);
  const direct = await sequentially(settings, directCall(target.modelUrl));
  const runLatency = await sequentially(settings, run);
  await sustained(target, run, settings.concurrency, settings.warmupSeconds);
  const throughput = await sustained(target, run, settings.concurrency, settings.seconds);
  return { direct, run: runLatency, throughput };
}

export interface TracingFigures {
  off: LatencyFigures;
  on: LatencyFigures;
  /** The p50 of runs with tracing on ÷ that of runs with tracing off. */
  ratioP50: number;
  /**
   * CPU time per run of each pair's API and worker, in milliseconds: what tracing costs in work, which a busy
   * machine moves much less than it moves latency.
   */
  cpuMsPerRun: { off: number; on: number };
}

/**
 * What trace export adds to a run: the same one-step runs through an API and worker with tracing off and a pair
 * alike but exporting every span over OTLP, one of each in turn (so that whatever else loads the machine weighs on
 * both alike).
 */
export async function measureTracing(
  off: RunTarget,
  on: RunTarget,
  settings: Pick<RunSettings, 'warmups' | 'samples'>,
): Promise<TracingFigures> {
  const runOff = runOnce(off, await createAgent(off));
  const runOn = runOnce(on, await createAgent(on));
  for (let i = 0; i < settings.warmups; i++) {
    await runOff();
    await runOn();
  }
  const pairCpuMs = (target: RunTarget) => cpuMs(target.apiPid) + cpuMs(target.workerPid);
  const cpuBefore = { off: pairCpuMs(off), on: pairCpuMs(on) };
  const offMs: number[] = [];
  const onMs: number[] = [];
  // Each pair in the other order from the last, so that neither side always follows the other's leftover work.
  for (let i = 0; i < settings.samples; i++) {
    if (i % 2 === 0) {
      offMs.push(await timed(runOff));
      onMs.push(await timed(runOn));
    } else {
      onMs.push(await timed(runOn));
      offMs.push(await timed(runOff));
    }
  }
  const perRun = (target: RunTarget, before: number) => Math.round(((pairCpuMs(target) - before) / settings.samples) * 10) / 10;
  const cpuMsPerRun = { off: perRun(off, cpuBefore.off), on: perRun(on, cpuBefore.on) };
  const [offFigures, onFigures] = [latencyOf(offMs), latencyOf(onMs)];
  return { off: offFigures, on: onFigures, ratioP50: Math.round((onFigures.p50Ms / offFigures.p50Ms) * 1000) / 1000, cpuMsPerRun };
}
