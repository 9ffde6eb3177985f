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
import { prepareSteadyTenant, type SteadyOutcome, type SteadyTenant } from '../test/hostile/steady-tenant.js';
import { eventually } from '../test/support/eventually.js';
import { ABUSES } from './isolation-abuses.js';
import type { HostileAnswer, HostileCommand } from './hostile-tenant.js';
import { BENCH_MODEL, latencyOf, type LatencyFigures } from './runs.js';

export interface IsolationSettings {
  warmups: number;
  /** Rounds of runs alone and under all the attacks at once, in turns; the figures pool them. */
  rounds: number;
  /** Runs measured alone, and under all the attacks at once, in each round. */
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
  /** Each round's own p99 ratios, closed-loop and paced: how far one round's figure strays from the pooled one. */
  rounds: IsolationRound[];
}

export interface IsolationRound {
  p99Ratio: number;
  pacedP99Ratio: number;
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
    return await measureWith(steady, attacker, hostile.admin, settings);
  } finally {
    await attacker.end();
  }
}

function figuresOf(outcomes: SteadyOutcome[]): SteadyFigures {
  return { ...latencyOf(outcomes.flatMap((o) => o.latenciesMs)), failures: outcomes.flatMap((o) => o.failures) };
}

// The longest the hostile tenant's stopped abuses may take to wind down before the steady tenant is measured alone.
const WIND_DOWN_MS = 120_000;

async function measureWith(
  steady: SteadyTenant,
  attacker: HostileTenant,
  hostile: ApiClient,
  settings: IsolationSettings,
): Promise<IsolationFigures> {
  const stop = (name: string) => attacker.command({ type: 'stop', name });
  const measured = (samples: number, everyMs = 0): Promise<SteadyOutcome> =>
    steady.work(samples, { atOnce: settings.atOnce, webhooks: false, maxFailures: settings.maxFailures, everyMs });
  // Alone means alone: the runs and calls of the abuses just stopped have ended (cancelled runs included).
  const woundDown = () =>
    eventually(
      async () => {
        const response = await hostile.get('/v1/runs?status=queued,in_progress,requires_action&limit=1');
        if (response.status !== 200 || response.body.data.length > 0) throw new Error(`the hostile tenant's runs are still under way`);
      },
      { timeoutMs: WIND_DOWN_MS, intervalMs: 500 },
    );

  await steady.work(settings.warmups, { atOnce: settings.atOnce, webhooks: false });
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
    byAttack[name] = figuresOf([await measured(settings.samplesPerAttack)]);
    await stop(name);
  }

  // Alone and under attack in turns, the order swapped each round, so that what changes over the run (tables
  // that grow, a machine that gets busier) weighs on both sides alike.
  const alone: SteadyOutcome[] = [];
  const pacedAlone: SteadyOutcome[] = [];
  const underAll: SteadyOutcome[] = [];
  const pacedUnderAll: SteadyOutcome[] = [];
  const rounds: IsolationRound[] = [];
  /** The closed-loop runs, then the paced ones. */
  const bothWays = async () => [await measured(settings.samples), await measured(settings.samples, settings.pacedEveryMs)] as const;
  const aloneRound = async () => {
    await woundDown();
    const figures = await bothWays();
    alone.push(figures[0]);
    pacedAlone.push(figures[1]);
    return figures;
  };
  const attackedRound = async () => {
    const begun: string[] = [];
    for (const [name] of ABUSES)
      if (
        await attacker.command({ type: 'start', name }).then(
          () => true,
          () => false,
        )
      )
        begun.push(name);
    const figures = await bothWays();
    for (const name of begun) await stop(name);
    underAll.push(figures[0]);
    pacedUnderAll.push(figures[1]);
    return figures;
  };
  for (let round = 0; round < settings.rounds; round++) {
    console.log(
      `  round ${round + 1} of ${settings.rounds}: ${round % 2 === 0 ? 'alone, then under all attacks at once' : 'under all attacks at once, then alone'}`,
    );
    let quiet, attacked;
    if (round % 2 === 0) {
      quiet = await aloneRound();
      attacked = await attackedRound();
    } else {
      attacked = await attackedRound();
      quiet = await aloneRound();
    }
    rounds.push({
      p99Ratio: figuresOf([attacked[0]]).p99Ms / figuresOf([quiet[0]]).p99Ms,
      pacedP99Ratio: figuresOf([attacked[1]]).p99Ms / figuresOf([quiet[1]]).p99Ms,
    });
  }
  const pooled = { alone: figuresOf(alone), underAll: figuresOf(underAll) };
  const paced = { alone: figuresOf(pacedAlone), underAll: figuresOf(pacedUnderAll) };
  return {
    ...pooled,
    byAttack,
    p50Ratio: pooled.underAll.p50Ms / pooled.alone.p50Ms,
    p99Ratio: pooled.underAll.p99Ms / pooled.alone.p99Ms,
    paced: { ...paced, p50Ratio: paced.underAll.p50Ms / paced.alone.p50Ms, p99Ratio: paced.underAll.p99Ms / paced.alone.p99Ms },
    rounds,
  };
}
