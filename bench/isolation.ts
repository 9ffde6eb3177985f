/**
 * The isolation benchmark: a steady tenant's one-step runs alone, then while a hostile tenant does each
 * abusive thing of the hostile-tenant suite (test/hostile) in turn, then all of them at once, in the same
 * stack and the same run of the benchmark. What the hostile tenant does to the steady one is the ratio of
 * the steady tenant's latencies under attack to its latencies alone.
 */
import { newTenant } from '../test/support/api.js';
import { ApiClient } from '../test/support/client.js';
import type { Queryable } from '../records/db.js';
import type { Battleground, RemoteHosts } from '../test/hostile/battleground.js';
import { prepareSteadyTenant } from '../test/hostile/steady-tenant.js';
import type { Attack } from '../test/hostile/attacks/attack.js';
import { hugeRunLists, openStreams, queueBehindSlowRun } from '../test/hostile/attacks/run-abuse.js';
import { floodingMcpListing, poisonedPattern, silentDns } from '../test/hostile/attacks/tool-abuse.js';
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
}

export interface IsolationTarget {
  apiUrl: string;
  adminKey: string;
  db: Queryable;
  hosts: RemoteHosts;
}

/** The settings the API and the worker need for the attacks: tool hosts on loopback, lookups at the test DNS server. */
export function isolationEnv(hosts: RemoteHosts): Record<string, string> {
  return { AGENTPLANE_TOOLS_ALLOW_PRIVATE: 'true', AGENTPLANE_DNS_SERVERS: hosts.dns.address };
}

type Abuse = (ground: Battleground) => Promise<Attack<unknown>>;

// The pattern last: should it still hold the worker, nothing after it would measure anything.
const ABUSES: [string, Abuse][] = [
  ['100 runs of 1 MiB tool outputs listed', hugeRunLists],
  ['300 open event streams', (ground) => openStreams(ground, 300)],
  ['100 runs queued behind a slow one', (ground) => queueBehindSlowRun(ground, 100)],
  ['tool host whose DNS never answers', silentDns],
  ['MCP listing of 40 MiB', floodingMcpListing],
  ['backtracking tool pattern', poisonedPattern],
];

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
  const measured = async (samples: number): Promise<SteadyFigures> => {
    const { latenciesMs, failures } = await steady.work(samples, {
      atOnce: settings.atOnce,
      webhooks: false,
      maxFailures: settings.maxFailures,
    });
    return { ...latencyOf(latenciesMs), failures };
  };

  await steady.work(settings.warmups, { atOnce: settings.atOnce, webhooks: false });
  const alone = await measured(settings.samples);
  const byAttack: Record<string, SteadyFigures> = {};
  for (const [name, abuse] of ABUSES) {
    console.log(`  under: ${name}`);
    // An abuse that cannot be set up (the platform lacks what it needs) is reported, and the others measured.
    const attack = await abuse(ground).catch((err: Error) => err);
    if (attack instanceof Error) {
      byAttack[name] = { ...latencyOf([]), failures: [`the attack could not begin: ${attack.message}`] };
      continue;
    }
    byAttack[name] = await measured(settings.samplesPerAttack);
    await attack.stop();
  }
  console.log('  under all attacks at once');
  const attacks = await Promise.allSettled(ABUSES.map(([, abuse]) => abuse(ground)));
  const underAll = await measured(settings.samples);
  for (const attack of attacks) if (attack.status === 'fulfilled') await attack.value.stop();
  return { alone, byAttack, underAll, p50Ratio: underAll.p50Ms / alone.p50Ms, p99Ratio: underAll.p99Ms / alone.p99Ms };
}
