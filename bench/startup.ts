/**
 * Start-up: each long-running command of the CLI started afresh, from its exec until it is ready (the API's
 * `/readyz` answers 200; the worker's probe `/readyz` does, once it polls its task queues), against the baseline of
 * a bare `node:http` server started the same way. CPU ms is the process's own CPU time when it became ready: what
 * a fleet pays for every pod that starts, and what a busy node delays it by.
 */
import { spawn } from 'node:child_process';
import { freePort, stopChild } from '../cli/embedded.js';
import { cpuMs } from './proc.js';
import { latencyOf, type LatencyFigures } from './runs.js';
import { whenReady } from './stack.js';

export interface StartupSettings {
  samples: number;
}

export interface StartupTimes {
  /** Exec to ready. */
  wall: LatencyFigures;
  /** The process's CPU time when it became ready, p50 and p99 over the samples. */
  cpu: LatencyFigures;
}

export interface StartupFigures {
  baseline: StartupTimes;
  api: StartupTimes;
  worker: StartupTimes;
}

// Asked this often, so the time to ready is measured to within it.
const READY_POLL_MS = 20;
const BARE_SERVER = `require('node:http').createServer((req, res) => res.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')`;

/** One start of `args` with `env`: exec to the first 200 from `readyPath` on `port`, and the CPU time spent by then. */
async function startOnce(
  args: string[],
  env: Record<string, string>,
  port: number,
  readyPath: string,
): Promise<{ wallMs: number; cpuMs: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  try {
    await whenReady(args.join(' '), `http://127.0.0.1:${port}`, readyPath, child, () => output, READY_POLL_MS);
    return { wallMs: performance.now() - started, cpuMs: cpuMs(child.pid!) };
  } finally {
    await stopChild(child);
  }
}

/**
 * `settings.samples` starts of each, in turns (baseline, API, worker), so that whatever else the machine does
 * weighs on all of them alike. `env` holds what the API and the worker need to reach PostgreSQL and Temporal.
 */
export async function measureStartup(cli: string, env: Record<string, string>, settings: StartupSettings): Promise<StartupFigures> {
  const runs = { baseline: [], api: [], worker: [] } as Record<keyof StartupFigures, { wallMs: number; cpuMs: number }[]>;
  for (let i = 0; i < settings.samples; i++) {
    const port = await freePort();
    runs.baseline.push(await startOnce(['-e', BARE_SERVER], { PORT: String(port) }, port, '/'));
    const apiPort = await freePort();
    runs.api.push(await startOnce([cli, 'api'], { ...env, PORT: String(apiPort) }, apiPort, '/readyz'));
    const probePort = await freePort();
    runs.worker.push(await startOnce([cli, 'worker'], { ...env, AGENTPLANE_PROBE_PORT: String(probePort) }, probePort, '/readyz'));
  }
  const times = (samples: { wallMs: number; cpuMs: number }[]): StartupTimes => ({
    wall: latencyOf(samples.map((s) => s.wallMs)),
    cpu: latencyOf(samples.map((s) => s.cpuMs)),
  });
  return { baseline: times(runs.baseline), api: times(runs.api), worker: times(runs.worker) };
}
