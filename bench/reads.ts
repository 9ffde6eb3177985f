/** The reads benchmark: a fixed number of keep-alive connections hammering a URL with autocannon. */
import autocannon from 'autocannon';
import { cpuMs } from './proc.js';

export interface ReadSettings {
  connections: number;
  /** Each target's warm-up, once. */
  warmupSeconds: number;
  /** Each sample's length. */
  seconds: number;
  rounds: number;
}

export interface ReadFigures {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /**
   * CPU time the server process spent per request. Less disturbed by other work on the machine than
   * req/s, since time spent waiting for a core is not counted.
   */
  cpuUsPerRequest: number;
}

async function load(url: string, headers: Record<string, string>, connections: number, seconds: number) {
  const result = await autocannon({ url, headers, connections, duration: seconds, timeout: 10 });
  const failures = result.non2xx + result.errors + result.timeouts;
  if (failures > 0) throw new Error(`${url}: ${failures} of ${result['2xx'] + failures} requests failed`);
  return result;
}

export interface ReadTarget {
  url: string;
  /** The server's process, whose CPU time is counted. */
  pid: number;
  headers: Record<string, string>;
}

/**
 * Warms each target up, then measures them in turn, `settings.rounds` times over, and gives each target's sample
 * of median req/s. Taking the targets in turn, round after round, spreads whatever else the machine is doing
 * evenly over them, where one long sample of each in a row would hand it all to whichever ran at the time.
 */
export async function measureReads<Name extends string>(
  targets: Record<Name, ReadTarget>,
  settings: ReadSettings,
): Promise<Record<Name, ReadFigures>> {
  const entries = Object.entries(targets) as [Name, ReadTarget][];
  for (const [, target] of entries) await load(target.url, target.headers, settings.connections, settings.warmupSeconds);
  const samples = new Map<Name, ReadFigures[]>(entries.map(([name]) => [name, []]));
  for (let round = 0; round < settings.rounds; round++) {
    for (const [name, target] of entries) samples.get(name)!.push(await sample(target, settings));
  }
  return Object.fromEntries(
    entries.map(([name]) => {
      const sorted = samples.get(name)!.sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
      return [name, sorted[Math.floor(sorted.length / 2)]!];
    }),
  ) as Record<Name, ReadFigures>;
}

async function sample(target: ReadTarget, settings: ReadSettings): Promise<ReadFigures> {
  const cpuBefore = cpuMs(target.pid);
  const result = await load(target.url, target.headers, settings.connections, settings.seconds);
  return {
    requestsPerSecond: result['2xx'] / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result['2xx'],
    cpuUsPerRequest: ((cpuMs(target.pid) - cpuBefore) * 1000) / result['2xx'],
  };
}
