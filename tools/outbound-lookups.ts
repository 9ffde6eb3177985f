/**
 * Resolving the names that tools, MCP servers and webhook endpoints point at, fairly across projects:
 * one project's names that never answer hold at most its own share of the lookups, never everyone's.
 *
 * By default names go to the system resolver (`dns.lookup`: the hosts file, search domains), which holds
 * one of libuv's four pool threads until it answers, so few run at once. With AGENTPLANE_DNS_SERVERS
 * (`1.1.1.1,[2606:4700::1111]:53`, …) they are asked of those servers directly (c-ares), which holds no
 * thread and gives a name up after a short timeout.
 */
import dns, { type LookupAddress, type LookupAllOptions } from 'node:dns';

export type Resolve = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;
/**
 * A Resolve for the lookups made on one project's behalf; a lookup still waiting for its turn when `signal`
 * aborts (its request was given up) is dropped rather than made.
 */
export type ProjectResolve = (projectId: string, signal?: AbortSignal) => Resolve;

export interface LookupShares {
  /** Lookups under way at once, across projects. */
  atOnce: number;
  /** Of those, the most one project's lookups may hold. */
  perProject: number;
  /** A lookup that waited this long for its turn is given up (ETIMEOUT): whoever asked has stopped waiting. */
  queueLimitMs: number;
}

// The system resolver: two of libuv's four threads at most, one per project, so the process's own file
// reads and lookups always have threads left, and one project's slow names leave the other slot to others.
const SYSTEM_SHARES: LookupShares = { atOnce: 2, perProject: 1, queueLimitMs: 15_000 };
// c-ares holds no thread: many may be under way, a few per project.
const SERVER_SHARES: LookupShares = { atOnce: 32, perProject: 4, queueLimitMs: 15_000 };
// Per server, per family: a name no server answers for is given up after about 3 s (1 s, then 2 s).
const QUERY_TIMEOUT_MS = 1_000;
const QUERY_TRIES = 2;

interface Waiting {
  queuedAt: number;
  signal?: AbortSignal;
  start(): void;
  giveUp(): void;
}

/**
 * `lookup`, at most `atOnce` at a time and `perProject` for any one project. When a slot frees, the
 * projects that wait take turns (round robin, the one just served last), each its oldest lookup first.
 */
export function fairLookups(lookup: Resolve, shares: LookupShares): ProjectResolve {
  let running = 0;
  const runningFor = new Map<string, number>();
  const waiting = new Map<string, Waiting[]>();
  // Projects with lookups waiting, the one whose turn is next first.
  const turns: string[] = [];

  const next = () => {
    for (let i = 0; i < turns.length && running < shares.atOnce;) {
      const projectId = turns[i]!;
      const queue = waiting.get(projectId)!;
      for (let entry = queue[0]; entry && (entry.signal?.aborted || Date.now() - entry.queuedAt > shares.queueLimitMs); entry = queue[0])
        queue.shift()!.giveUp();
      if (queue.length > 0 && (runningFor.get(projectId) ?? 0) >= shares.perProject) {
        i++;
        continue;
      }
      turns.splice(i, 1);
      const entry = queue.shift();
      if (queue.length === 0) waiting.delete(projectId);
      else turns.push(projectId);
      entry?.start();
    }
  };

  return (projectId, signal) => (hostname, options, callback) => {
    const start = () => {
      running += 1;
      runningFor.set(projectId, (runningFor.get(projectId) ?? 0) + 1);
      lookup(hostname, options, (err, addresses) => {
        running -= 1;
        const left = runningFor.get(projectId)! - 1;
        if (left === 0) runningFor.delete(projectId);
        else runningFor.set(projectId, left);
        // The project that was just served waits behind the others.
        const turn = turns.indexOf(projectId);
        if (turn >= 0) turns.push(...turns.splice(turn, 1));
        next();
        callback(err, addresses);
      });
    };
    const giveUp = () =>
      callback(Object.assign(new Error(`looking up ${hostname} waited too long for its turn`), { code: 'ETIMEOUT' }), []);
    if (running < shares.atOnce && (runningFor.get(projectId) ?? 0) < shares.perProject && !waiting.has(projectId)) return start();
    const queue = waiting.get(projectId);
    if (queue) queue.push({ queuedAt: Date.now(), signal, start, giveUp });
    else {
      waiting.set(projectId, [{ queuedAt: Date.now(), signal, start, giveUp }]);
      turns.push(projectId);
    }
  };
}

/**
 * A Resolve that asks `servers` directly, IPv4 and IPv6 at once. A name with no address fails with
 * ENOTFOUND; servers that do not answer in time, with ETIMEOUT.
 */
export function serverLookup(servers: string[]): Resolve {
  const resolver = new dns.promises.Resolver({ timeout: QUERY_TIMEOUT_MS, tries: QUERY_TRIES });
  resolver.setServers(servers);
  return (hostname, options, callback) => {
    const families = options.family === 4 || options.family === 6 ? [options.family] : [4, 6];
    void Promise.allSettled(families.map((family) => (family === 4 ? resolver.resolve4(hostname) : resolver.resolve6(hostname)))).then(
      (results) => {
        const addresses = results.flatMap((result, i) =>
          result.status === 'fulfilled' ? result.value.map((address) => ({ address, family: families[i]! })) : [],
        );
        if (addresses.length > 0) return callback(null, addresses);
        const failure = results
          .map((result) => (result.status === 'rejected' ? (result.reason as NodeJS.ErrnoException) : null))
          .find((err) => err !== null && err.code !== dns.NODATA && err.code !== dns.NOTFOUND);
        callback(failure ?? Object.assign(new Error(`${hostname} does not resolve to any address`), { code: 'ENOTFOUND' }), []);
      },
    );
  };
}

/** AGENTPLANE_DNS_SERVERS as a list, or undefined (the system resolver) when unset or empty. */
export function dnsServersFromEnv(env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  const servers = (env.AGENTPLANE_DNS_SERVERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return servers.length > 0 ? servers : undefined;
}

/** Why `servers` cannot be asked (an entry that is not an IP address with an optional port), or null. */
export function dnsServersProblem(servers: string[]): string | null {
  try {
    new dns.Resolver().setServers(servers);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

let current: { servers: string; resolve: ProjectResolve } | undefined;

/** The process's outbound lookups, as AGENTPLANE_DNS_SERVERS says now. */
export function outboundLookups(env: NodeJS.ProcessEnv = process.env): ProjectResolve {
  const servers = dnsServersFromEnv(env);
  const key = servers?.join(',') ?? '';
  if (current?.servers !== key) {
    current = {
      servers: key,
      resolve: servers ? fairLookups(serverLookup(servers), SERVER_SHARES) : fairLookups(dns.lookup, SYSTEM_SHARES),
    };
  }
  return current.resolve;
}
