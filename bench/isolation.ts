/**
 * The isolation benchmark: a steady tenant's one-step runs alone, then while a hostile tenant does each
 * abusive thing of the hostile-tenant suite (test/hostile) in turn, then all of them at once, in the same
 * stack and the same run of the benchmark. What the hostile tenant does to the steady one is the ratio of
 * the steady tenant's latencies under attack to its latencies alone.
 *
 * The steady tenant works at a pace of its own, as a service calling the platform does: each client starts a
 * run every so often, whatever the platform does. It is also measured in a closed loop, each client starting
 * its next run as soon as its last one answered, which takes whatever capacity it is given: alone it keeps
 * most of a small machine busy, and no platform that gives the hostile tenant an even share of the machine
 * could hold its latency, so that figure says how much room the machine has, not how well tenants are kept
 * apart. The share of the machine's cores that was busy is measured beside each figure.
 *
 * In each round, the paced runs alone and under all the attacks begin with a few runs of their own, reported
 * apart; the rows under each attack on its own have none, and measure it from its start. As the attacks begin,
 * the platform is still taking in their setup (a hundred runs queued at once, the 100 MiB of tool output the
 * benchmark writes straight to the database, a hundred and fifty calls started together); as they end, it is
 * still winding them down. The goal is on the runs after those: a tenant under an attack that goes on, against
 * the same tenant alone. The first runs under attack are printed beside it with their own ratio, so the price
 * of an attack's first seconds is not hidden. Where the paced runs' time went, alone and under all the attacks, is
 * reported beside them (`RunPhases`), from the timestamps the platform recorded.
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
import { prepareSteadyTenant, type AnsweredRun, type SteadyOutcome, type SteadyTenant } from '../test/hostile/steady-tenant.js';
import { eventually } from '../test/support/eventually.js';
import { ABUSES } from './isolation-abuses.js';
import type { HostileAnswer, HostileCommand } from './hostile-tenant.js';
import { machineCpuMs } from './proc.js';
import { BENCH_MODEL, latencyOf, type LatencyFigures } from './runs.js';

export interface IsolationSettings {
  warmups: number;
  /** Rounds of runs alone and under all the attacks at once, in turns; the figures pool them. */
  rounds: number;
  /** Runs measured alone, and under all the attacks at once, in each round, paced and in a closed loop each. */
  samples: number;
  /** Runs measured under each attack on its own, paced. */
  samplesPerAttack: number;
  /** The steady tenant's clients. */
  atOnce: number;
  /** Steady-tenant failures after which a measurement gives up. */
  maxFailures: number;
  /** The steady tenant's pace: each client starts a run this long after its last one started (or when that one answered, if later). */
  pacedEveryMs: number;
  /** Paced runs made at the start of each round's measurement, alone and under all the attacks, and reported apart from it. */
  leadIn: number;
}

export interface SteadyFigures extends LatencyFigures {
  /** What the steady tenant noticed going wrong (runs that failed or were refused), one line each. */
  failures: string[];
  /** The share of the machine's cores busy while these runs were made, 0 to 1, whatever process kept them busy. */
  machineBusy: number;
}

/** One way of working of the steady tenant, alone and under all the attacks at once, pooled over the rounds. */
export interface WorkloadFigures {
  /**
   * The runs made first, alone (as the attacks' runs have just wound down) and under all the attacks (as they
   * have just begun), pooled over the rounds; not among the figures below. Only the paced tenant makes them.
   */
  leadIn?: { alone: SteadyFigures; underAll: SteadyFigures };
  alone: SteadyFigures;
  underAll: SteadyFigures;
  /** underAll ÷ alone. */
  p50Ratio: number;
  p99Ratio: number;
  /** Each round's own p99 ratio: how far one round's figure strays from the pooled one. */
  roundP99Ratios: number[];
  /** Each round's own p99s (ms), alone and under all the attacks: which side a stray round's ratio comes from. */
  roundP99Ms: { alone: number; underAll: number }[];
  /**
   * The p99 ratio's 95 % interval, by resampling the pooled runs of each side: how far the ratio could stray
   * from one run of the benchmark to the next by the luck of which runs came out slowest.
   */
  p99RatioInterval: [number, number];
}

/**
 * Where a run's time went, from its client's request to its answer; the five add up to the run's latency. The
 * platform's own timestamps are each transaction's start, on the same machine as the client.
 */
export interface RunPhases {
  /** From the request to the run's record: the API. */
  recorded: number;
  /** From the record to the run's start: its workflow started, its first task dispatched, the run admitted. */
  started: number;
  /** Its model and tool calls, from each one's record to its result's, all together. */
  calls: number;
  /** Between its start and its last call's end, outside the calls: each call dispatched by Temporal to a worker. */
  between: number;
  /** From its last call's end to the answer: the end recorded, the API told, the run read and sent. */
  answered: number;
}

/** The phases, in the order a run goes through them, with how the report names them. */
export const RUN_PHASES: Record<keyof RunPhases, string> = {
  recorded: 'request to record (API)',
  started: 'record to start',
  calls: 'model and tool calls',
  between: 'between calls',
  answered: 'last call to answer',
};

/**
 * Each phase of the paced runs, alone and under all the attacks at once: its own p50 and p99, and its mean over
 * the slowest 1 % of the runs (those the p99 of their latency is on).
 */
export type PhaseFigures = Record<'alone' | 'underAll', Record<keyof RunPhases, { p50Ms: number; p99Ms: number; slowestMeanMs: number }>>;

export interface IsolationFigures {
  /** The steady tenant at its own pace: the figures the goal is on. */
  paced: WorkloadFigures;
  /** Where the paced runs' time went, alone and under all the attacks at once. */
  phases: PhaseFigures;
  /** The paced tenant under each attack on its own, by name. */
  byAttack: Record<string, SteadyFigures>;
  /** The same tenant in a closed loop, each client starting a run as soon as its last one answered. */
  closedLoop: WorkloadFigures;
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
    return await measureWith(steady, attacker, hostile.admin, target.db, settings);
  } finally {
    await attacker.end();
  }
}

/** The steady tenant's runs of one measurement, and the machine's CPU time while it made them. */
interface Measured {
  outcome: SteadyOutcome;
  busyMs: number;
  totalMs: number;
}

/** One round's measurements of one way of working. */
interface RoundMeasured {
  alone: Measured;
  underAll: Measured;
  leadIn?: { alone: Measured; underAll: Measured };
}

const latenciesOf = (measured: Measured[]) => measured.flatMap((m) => m.outcome.answered.map((run) => run.ms));

// Resamples for the p99 ratio's interval, and a fixed seed so that the same runs give the same interval.
const RESAMPLES = 2_000;
const RESAMPLING_SEED = 0x5eed;

/** The p99 of `ms` drawn again, as many, with replacement, with `random`. */
function resampledP99(ms: number[], random: () => number): number {
  const drawn = Array.from({ length: ms.length }, () => ms[Math.floor(random() * ms.length)]!);
  return latencyOf(drawn).p99Ms;
}

/**
 * The 2.5th and 97.5th percentiles of the p99 ratio of `under` to `alone` over resamples of both (the percentile
 * bootstrap): a ratio outside it in another run of the benchmark is more than the luck of the slowest runs.
 */
export function p99RatioInterval(alone: number[], under: number[], resamples = RESAMPLES): [number, number] {
  if (alone.length === 0 || under.length === 0) return [NaN, NaN];
  // mulberry32: a small seeded generator, so that the interval is the same for the same runs.
  let state = RESAMPLING_SEED;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const ratios = Array.from({ length: resamples }, () => resampledP99(under, random) / resampledP99(alone, random)).sort((a, b) => a - b);
  return [ratios[Math.floor(resamples * 0.025)]!, ratios[Math.ceil(resamples * 0.975) - 1]!];
}

function figuresOf(measured: Measured[]): SteadyFigures {
  const [busyMs, totalMs] = measured.reduce(([busy, total], m) => [busy + m.busyMs, total + m.totalMs], [0, 0]);
  return {
    ...latencyOf(latenciesOf(measured)),
    failures: measured.flatMap((m) => m.outcome.failures),
    machineBusy: totalMs > 0 ? busyMs / totalMs : 0,
  };
}

/** The pooled figures of one way of working, alone and under attack, and each round's p99s and their ratio. */
function workloadOf(rounds: RoundMeasured[]): WorkloadFigures {
  const alone = figuresOf(rounds.map((r) => r.alone));
  const underAll = figuresOf(rounds.map((r) => r.underAll));
  const leadIns = rounds.flatMap((r) => (r.leadIn ? [r.leadIn] : []));
  const roundP99Ms = rounds.map((r) => ({ alone: figuresOf([r.alone]).p99Ms, underAll: figuresOf([r.underAll]).p99Ms }));
  return {
    ...(leadIns.length > 0 && {
      leadIn: { alone: figuresOf(leadIns.map((l) => l.alone)), underAll: figuresOf(leadIns.map((l) => l.underAll)) },
    }),
    alone,
    underAll,
    p50Ratio: underAll.p50Ms / alone.p50Ms,
    p99Ratio: underAll.p99Ms / alone.p99Ms,
    roundP99Ratios: roundP99Ms.map((r) => r.underAll / r.alone),
    roundP99Ms,
    p99RatioInterval: p99RatioInterval(latenciesOf(rounds.map((r) => r.alone)), latenciesOf(rounds.map((r) => r.underAll))),
  };
}

const epochMs = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;

/** The phases of each of `answered`, from the timestamps its run and steps were recorded with. */
async function phasesOf(db: Queryable, answered: AnsweredRun[]): Promise<RunPhases[]> {
  const ids = answered.map((a) => a.runId);
  const { rows } = await db.query<{ id: string; created: number; started: number; calls: number; last: number | null }>(
    `SELECT r.id, ${epochMs('r.created_at')} AS created, ${epochMs('r.started_at')} AS started,
            coalesce(sum(${epochMs('s.completed_at')} - ${epochMs('s.started_at')}), 0) AS calls,
            max(${epochMs('s.completed_at')}) AS last
       FROM runs r LEFT JOIN run_steps s ON s.run_id = r.id
      WHERE r.id = ANY($1) GROUP BY r.id`,
    [ids],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return answered.flatMap(({ runId, sentAtMs, ms }) => {
    const run = byId.get(runId);
    if (!run) return [];
    const lastCallEnd = run.last ?? run.started;
    return [
      {
        recorded: run.created - sentAtMs,
        started: run.started - run.created,
        calls: run.calls,
        between: lastCallEnd - run.started - run.calls,
        answered: sentAtMs + ms - lastCallEnd,
      },
    ];
  });
}

function phaseFiguresOf(phases: RunPhases[]): PhaseFigures['alone'] {
  const names = Object.keys(RUN_PHASES) as (keyof RunPhases)[];
  const total = (p: RunPhases) => names.reduce((sum, name) => sum + p[name], 0);
  const slowest = [...phases].sort((a, b) => total(b) - total(a)).slice(0, Math.max(1, Math.ceil(phases.length / 100)));
  return Object.fromEntries(
    names.map((name) => {
      const { p50Ms, p99Ms } = latencyOf(phases.map((p) => p[name]));
      return [name, { p50Ms, p99Ms, slowestMeanMs: latencyOf(slowest.map((p) => p[name])).meanMs }];
    }),
  ) as PhaseFigures['alone'];
}

// The longest the hostile tenant's stopped abuses may take to wind down before the steady tenant is measured alone.
const WIND_DOWN_MS = 120_000;

async function measureWith(
  steady: SteadyTenant,
  attacker: HostileTenant,
  hostile: ApiClient,
  db: Queryable,
  settings: IsolationSettings,
): Promise<IsolationFigures> {
  const stop = (name: string) => attacker.command({ type: 'stop', name });
  const measured = async (samples: number, everyMs: number): Promise<Measured> => {
    const before = machineCpuMs();
    const outcome = await steady.work(samples, { atOnce: settings.atOnce, webhooks: false, maxFailures: settings.maxFailures, everyMs });
    const after = machineCpuMs();
    return { outcome, busyMs: after.busy - before.busy, totalMs: after.total - before.total };
  };
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
      byAttack[name] = { ...latencyOf([]), failures: [`the attack could not begin: ${failed.message}`], machineBusy: 0 };
      continue;
    }
    byAttack[name] = figuresOf([await measured(settings.samplesPerAttack, settings.pacedEveryMs)]);
    await stop(name);
  }

  // Alone and under attack in turns, the order swapped each round, so that what changes over the run (tables
  // that grow, Temporal's in-memory store that grows with every run) weighs on both sides alike; over an even
  // number of rounds a steady drift weighs on them equally.
  // Each round measures the paced tenant first (its lead-in as the attacks begin, then the runs the goal is on),
  // and the closed loop after.
  const paced: RoundMeasured[] = [];
  const closedLoop: RoundMeasured[] = [];
  /** The paced lead-in, the paced runs, then the closed-loop ones. */
  const bothWays = async () => ({
    leadIn: await measured(settings.leadIn, settings.pacedEveryMs),
    paced: await measured(settings.samples, settings.pacedEveryMs),
    closedLoop: await measured(settings.samples, 0),
  });
  const aloneRound = async () => {
    await woundDown();
    return bothWays();
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
    return figures;
  };
  for (let round = 0; round < settings.rounds; round++) {
    console.log(
      `  round ${round + 1} of ${settings.rounds}: ${round % 2 === 0 ? 'alone, then under all attacks at once' : 'under all attacks at once, then alone'}`,
    );
    let alone, underAll;
    if (round % 2 === 0) {
      alone = await aloneRound();
      underAll = await attackedRound();
    } else {
      underAll = await attackedRound();
      alone = await aloneRound();
    }
    paced.push({ alone: alone.paced, underAll: underAll.paced, leadIn: { alone: alone.leadIn, underAll: underAll.leadIn } });
    closedLoop.push({ alone: alone.closedLoop, underAll: underAll.closedLoop });
  }
  const phasesUnder = async (side: 'alone' | 'underAll') =>
    phaseFiguresOf(
      await phasesOf(
        db,
        paced.flatMap((round) => round[side].outcome.answered),
      ),
    );
  return {
    paced: workloadOf(paced),
    phases: { alone: await phasesUnder('alone'), underAll: await phasesUnder('underAll') },
    byAttack,
    closedLoop: workloadOf(closedLoop),
  };
}
