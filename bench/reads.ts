/** The reads benchmark: a fixed number of keep-alive connections hammering one URL with autocannon. */
import autocannon from 'autocannon';
import { cpuMs } from './proc.js';

export interface ReadSettings {
  connections: number;
  warmupSeconds: number;
  seconds: number;
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

/** Warms the server (process `pid`) up, then measures. */
export async function measureReads(
  url: string,
  pid: number,
  headers: Record<string, string>,
  settings: ReadSettings,
): Promise<ReadFigures> {
  await load(url, headers, settings.connections, settings.warmupSeconds);
  const cpuBefore = cpuMs(pid);
  const result = await load(url, headers, settings.connections, settings.seconds);
  return {
    requestsPerSecond: result['2xx'] / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result['2xx'],
    cpuUsPerRequest: ((cpuMs(pid) - cpuBefore) * 1000) / result['2xx'],
  };
}
