/**
 * The isolation benchmark: a steady tenant's one-step runs alone, then while a hostile tenant does each
 * abusive thing of the hostile-tenant suite (test/hostile) in turn, then all of them at once, in the same
 * stack and the same run of the benchmark. What the hostile tenant does to the steady one is the ratio of
 * the steady tenant's latencies under attack to its latencies alone.
 *
 * The hostile tenant's client and the MCP server it floods from run in a process of their own at the lowest CPU
 * priority (hostile-tenant.ts): on a real deployment they are the tenant's machines, not the platform's, and
 * what the benchmark measures is what the platform lets the tenant take from the others.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { newTenant } from '../test/support/api.js';
import { ApiClient } from '../test/support/client.js';
import type { Queryable } from '../records/db.js';
import type { Battleground, RemoteHosts } from '../test/hostile/battleground.js';
import { prepareSteadyTenant } from '../test/hostile/steady-tenant.js';
import { ABUSES } from './isolation-abuses.js';
import type { HostileAnswer, HostileCommand } from './hostile-tenant.js';
import { BENCH_MODEL, latencyOf, type LatencyFigures } from './runs.js';

export interface IsolationSettings {
  warmups: number;
  /** Runs measured alone, and under all the attacks at once. */
  samples: number;
  /** Runs measured under each attack on its own. */
  samplesPerAttack: number;
  /** The steady tenant's clients, each starting its next run when its last one answered. */
  atOnce: number;
  /** Steady-tenant failures after which a measurement gives up. */
  maxFailures: number;
  /**
   * The paced measurements: each client starts a run this long after its last one started (or when that one
   * answered, if later), alone and under all the attacks at once, beside the closed-loop ones.
   */
  pacedEveryMs: number;
}

export interface SteadyFigures extends LatencyFigures {
  /** What the steady tenant noticed going wrong (runs that failed or were refused), one line each. */
  failures: string[];
}

export interface IsolationFigures {
  alone: SteadyFigures;
  /** Under each attack on its own, by name. */
  byAttack: Record<string, SteadyFigures>;
  underAll: SteadyFigures;
  /** underAll ÷ alone. */
  p50Ratio: number;
  p99Ratio: number;
  /** The paced tenant alone and under all the attacks at once. */
  paced: { alone: SteadyFigures; underAll: SteadyFigures; p50Ratio: number; p99Ratio: number };
}

export interface IsolationTarget {
  apiUrl: string;
  adminKey: string;
  db: Queryable;
  /** The same database, for the hostile tenant's process. */
  databaseUrl: string;
  hosts: RemoteHosts;
}

/** The settings the API and the worker need for the attacks: tool hosts on loopback, lookups at the test DNS server. */
export function isolationEnv(hosts: RemoteHosts): Record<string, string> {
  return { AGENTPLANE_TOOLS_ALLOW_PRIVATE: 'true', AGENTPLANE_DNS_SERVERS: hosts.dns.address };
}

// Lowest priority: what is left of the machine once the platform and the steady tenant have had theirs.
const HOSTILE_NICENESS = 19;

/** The hostile tenant's process: each command answered in turn, an error as a rejection. */
interface HostileTenant {
  command(command: HostileCommand): Promise<void>;
  end(): Promise<void>;
}

// How often the hostile tenant's process hears which names the DNS server was asked.
const DNS_NEWS_MS = 250;

async function hostileProcess(begin: Extract<HostileCommand, { type: 'begin' }>, hosts: RemoteHosts): Promise<HostileTenant> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./hostile-tenant.js', import.meta.url)), [], { stdio: 'inherit' });
  setPriority(child.pid!, HOSTILE_NICENESS);
  const waiting: { resolve: () => void; reject: (err: Error) => void }[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.on('message', (answer: HostileAnswer) => {
    const next = waiting.shift();
    if (answer.error) next?.reject(new Error(answer.error));
    else next?.resolve();
  });
  child.once('exit', (code) => {
    for (const next of waiting.splice(0)) next.reject(new Error(`the hostile tenant's process exited (${code})`));
  });
  const command = (sent: HostileCommand) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ resolve, reject });
      child.send(sent);
    });
  await command(begin);
  const news = setInterval(
    () => child.connected && child.send({ type: 'dns', asked: hosts.dns.asked } satisfies HostileCommand),
    DNS_NEWS_MS,
  );
  return {
    command,
    async end() {
      clearInterval(news);
      await command({ type: 'end' }).catch(() => undefined);
      await exited;
    },
  };
}

export async function measureIsolation(target: IsolationTarget, settings: IsolationSettings): Promise<IsolationFigures> {
  const root = new ApiClient(target.apiUrl, target.adminKey);
  const [hostile, steadyTenant] = await Promise.all([
    newTenant({ url: target.apiUrl, root }, 'hostile'),
    newTenant({ url: target.apiUrl, root }, 'steady'),
  ]);
  const ground: Battleground = {
    apiUrl: target.apiUrl,
    db: target.db,
    model: BENCH_MODEL,
    hosts: target.hosts,
    hostile: hostile.admin,
    steady: steadyTenant.admin,
  };
  const steady = await prepareSteadyTenant(ground);
  const attacker = await hostileProcess(
    {
      type: 'begin',
      apiUrl: target.apiUrl,
      key: hostile.admin.key!,
      model: BENCH_MODEL,
      databaseUrl: target.databaseUrl,
      toolsUrl: target.hosts.tools.url,
    },
    target.hosts,
  );
  try {
    return await measureWith(steady, attacker, settings);
  } finally {
    await attacker.end();
  }
}

async function measureWith(
  steady: Awaited<ReturnType<typeof prepareSteadyTenant>>,
  attacker: HostileTenant,
  settings: IsolationSettings,
): Promise<IsolationFigures> {
  const stop = (name: string) => attacker.command({ type: 'stop', name });
  const measured = async (samples: number, everyMs = 0): Promise<SteadyFigures> => {
    const { latenciesMs, failures } = await steady.work(samples, {
      atOnce: settings.atOnce,
      webhooks: false,
      maxFailures: settings.maxFailures,
      everyMs,
    });
    return { ...latencyOf(latenciesMs), failures };
  };

  await steady.work(settings.warmups, { atOnce: settings.atOnce, webhooks: false });
  const alone = await measured(settings.samples);
  const pacedAlone = await measured(settings.samples, settings.pacedEveryMs);
  const byAttack: Record<string, SteadyFigures> = {};
  for (const [name] of ABUSES) {
    console.log(`  under: ${name}`);
    // An abuse that cannot be set up (the platform lacks what it needs) is reported, and the others measured.
    const failed = await attacker.command({ type: 'start', name }).then(
      () => null,
      (err: Error) => err,
    );
    if (failed) {
      byAttack[name] = { ...latencyOf([]), failures: [`the attack could not begin: ${failed.message}`] };
      continue;
    }
    byAttack[name] = await measured(settings.samplesPerAttack);
    await stop(name);
  }
  console.log('  under all attacks at once');
  const begun: string[] = [];
  for (const [name] of ABUSES)
    if (
      await attacker.command({ type: 'start', name }).then(
        () => true,
        () => false,
      )
    )
      begun.push(name);
  const underAll = await measured(settings.samples);
  const pacedUnderAll = await measured(settings.samples, settings.pacedEveryMs);
  for (const name of begun) await stop(name);
  return {
    alone,
    byAttack,
    underAll,
    p50Ratio: underAll.p50Ms / alone.p50Ms,
    p99Ratio: underAll.p99Ms / alone.p99Ms,
    paced: {
      alone: pacedAlone,
      underAll: pacedUnderAll,
      p50Ratio: pacedUnderAll.p50Ms / pacedAlone.p50Ms,
      p99Ratio: pacedUnderAll.p99Ms / pacedAlone.p99Ms,
    },
  };
}
