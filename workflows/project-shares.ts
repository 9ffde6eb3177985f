/**
 * Turns among projects for a worker's event loop. The loop is one thread that every project's activities
 * share: a project with many activities under way (a tool host that never answers, a loop of runs) would
 * otherwise take the loop, and with it the CPU that Temporal and PostgreSQL spend on its runs, in proportion
 * to how many it has, and another project's runs would slow by as much.
 *
 * So the loop's busy time is counted against projects, and decays by half every few seconds. Each tick's busy
 * time is shared out in proportion to each project's activities under way, and the starts and ends its
 * activities had in the tick (the run's records read and written, the answer passed back), local ones (a run's
 * bookkeeping, which is never held) included. So a project whose runs start and end many short activities
 * is charged for them, and not only the project whose longer calls happen to be under way meanwhile.
 *
 * While the loop is busy, an activity of a project that has used more than its share (an even split among
 * the projects contending for the loop: those with activities waiting for a turn, or that started or ended one
 * a moment ago) waits for its turn before it starts: until its project is back within its share, the loop is no
 * longer busy, or it has waited the longest a turn may take. A project alone on the worker, or one within its
 * share, never waits, and nor does one whose rivals have gone quiet: their past use holds nobody up. A rival
 * whose only activities are calls under way (a model or a host that has not answered yet) asks nothing of the
 * loop until one ends, so nobody waits for it meanwhile: a turn given to no one is time lost. A project that
 * comes to contend, new or back from quiet, starts no lower than holds up none of those already there, so they
 * are not held for the loop they had before it came.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { Context } from '@temporalio/activity';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import { LRUCache } from 'lru-cache';
import { statement, type Queryable } from '../records/db.js';

export interface FairShareSettings {
  /** The loop's utilisation (0 to 1) above which projects take turns; at 1 they never do. */
  busyUtilization: number;
  /** The longest an activity waits for its project's turn; at 0 none waits. */
  maxWaitMs: number;
  /**
   * Of a worker's activity slots, the most one project's calls to the hosts its agents name may hold
   * (`slot-shares.ts`); `HOST_CALL_SLOTS_PER_PROJECT` when absent.
   */
  hostCallsPerProject?: number;
  /**
   * How long one slice of a file's content stage runs before the file goes back to the extraction queue, behind
   * the files of projects waiting for a slot (`extraction/activities.ts`); `DEFAULT_EXTRACTION_SLICE_SECONDS` when absent.
   */
  extractionSliceSeconds?: number;
}

export const DEFAULT_FAIR_SHARE: FairShareSettings = { busyUtilization: 0.3, maxWaitMs: 2_000 };

/** How long one slice of a file's content stage runs: what a long document holds an extraction slot for at a time. */
export const DEFAULT_EXTRACTION_SLICE_SECONDS = 30;

const TICK_MS = 100;
// Use (and the loop's utilisation) halve in this long: a project's past weighs for a few seconds.
const HALF_LIFE_MS = 2_000;
const DECAY = 0.5 ** (TICK_MS / HALF_LIFE_MS);
// A project waits once it has used a quarter more than its share, so two projects using about as much
// as each other never hold each other up.
const OVER_SHARE = 1.25;
// A project whose use has decayed below this many milliseconds of the loop is forgotten.
const FORGOTTEN_MS = 1;
// A project none of whose activities started or ended for this many ticks, and none waiting, no longer contends:
// the gaps between one run's activities are shorter, and a project that has finished, or only waits on calls
// under way, is not waited for while its use decays.
const QUIET_AFTER_TICKS = 10;
// Activities waiting for a turn still tell Temporal they are alive (their heartbeat timeout is 5 s).
const WAITING_HEARTBEAT_MS = 1_000;

export class ProjectShares {
  /** Milliseconds of the loop each project has used, decayed. */
  private readonly used = new Map<string, number>();
  private readonly running = new Map<string, number>();
  /** Starts and ends of each project's activities, local ones included, since the last tick. */
  private readonly edges = new Map<string, number>();
  private readonly waiting = new Set<() => void>();
  /** Activities waiting for a turn, by project. */
  private readonly waitingOf = new Map<string, number>();
  /** The tick at which an activity of each project last started or ended. */
  private readonly lastEdgeTick = new Map<string, number>();
  private ticks = 0;
  private utilization = 0;
  private last: EventLoopUtilization = performance.eventLoopUtilization();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly settings: FairShareSettings) {}

  get enabled(): boolean {
    return this.settings.busyUtilization < 1 && this.settings.maxWaitMs > 0;
  }

  /** Whether an activity of `projectId` starting now would wait for a turn. */
  mustWait(projectId: string): boolean {
    if (this.utilization <= this.settings.busyUtilization || this.used.size < 2) return false;
    const contenders = [...this.used].filter(([project]) => project === projectId || this.contends(project));
    if (contenders.length < 2) return false;
    const total = contenders.reduce((sum, [, ms]) => sum + ms, 0);
    return (this.used.get(projectId) ?? 0) > (OVER_SHARE * total) / contenders.length;
  }

  /**
   * Whether a project asks for the loop: it has an activity waiting for its turn, or one started or ended lately
   * (a run's next step follows its last one within a moment). Calls under way alone do not ask.
   */
  private contends(projectId: string): boolean {
    if (this.waitingOf.has(projectId)) return true;
    return this.ticks - (this.lastEdgeTick.get(projectId) ?? -Infinity) < QUIET_AFTER_TICKS;
  }

  /**
   * Does `work` for `projectId` once it is the project's turn (waited for at most `maxWaitMs`, and no longer once
   * `signal` aborts; `beat` is called every second meanwhile), counting it running while it lasts.
   */
  async run<T>(projectId: string, work: () => Promise<T>, signal?: AbortSignal, beat?: () => void): Promise<T> {
    this.tickWhileUsed();
    if (this.mustWait(projectId)) await this.turn(projectId, signal, beat);
    this.running.set(projectId, (this.running.get(projectId) ?? 0) + 1);
    this.edge(projectId);
    try {
      return await work();
    } finally {
      const left = this.running.get(projectId)! - 1;
      if (left === 0) this.running.delete(projectId);
      else this.running.set(projectId, left);
      this.edge(projectId);
    }
  }

  /** Does a local activity of `projectId` at once, counting its start and end against the project. */
  async runLocal<T>(projectId: string, work: () => Promise<T>): Promise<T> {
    this.tickWhileUsed();
    this.edge(projectId);
    try {
      return await work();
    } finally {
      this.edge(projectId);
    }
  }

  /** Counts a start or an end of one of `projectId`'s activities; the project contends for the loop. */
  private edge(projectId: string): void {
    if (!this.contends(projectId)) this.join(projectId);
    this.edges.set(projectId, (this.edges.get(projectId) ?? 0) + 1);
    this.lastEdgeTick.set(projectId, this.ticks);
  }

  /**
   * A project that comes to contend (new to the worker, or back from a quiet second) counts from then on as
   * having used at least the least at which its coming holds up none of the projects contending within their
   * share, as a CPU scheduler places a waking task: the loop they had while it asked for nothing took nothing
   * from it. Counted from what little it had, it would leave them over a share reckoned with it, held for the
   * loop they had before it came. No more than that least: from its first tick on, a project that uses more
   * than the others, newcomer or not, is held, so a project back from a slow call still has turns before a
   * rival that kept the loop busy meanwhile.
   */
  private join(projectId: string): void {
    const others = [...this.used].filter(([project]) => project !== projectId && this.contends(project)).map(([, ms]) => ms);
    const least = leastHoldingNobody(others);
    if (least > (this.used.get(projectId) ?? 0)) this.used.set(projectId, least);
  }

  /** The loop's use by project, decayed, in milliseconds. */
  usage(): Map<string, number> {
    return new Map(this.used);
  }

  private turn(projectId: string, signal?: AbortSignal, beat?: () => void): Promise<void> {
    const waitedSince = Date.now();
    this.waitingOf.set(projectId, (this.waitingOf.get(projectId) ?? 0) + 1);
    return new Promise((resolve) => {
      const heartbeats = beat ? setInterval(beat, WAITING_HEARTBEAT_MS) : undefined;
      const check = () => {
        if (!signal?.aborted && Date.now() - waitedSince < this.settings.maxWaitMs && this.mustWait(projectId)) return;
        const left = this.waitingOf.get(projectId)! - 1;
        if (left === 0) this.waitingOf.delete(projectId);
        else this.waitingOf.set(projectId, left);
        this.waiting.delete(check);
        clearInterval(heartbeats);
        signal?.removeEventListener('abort', check);
        resolve();
      };
      this.waiting.add(check);
      signal?.addEventListener('abort', check, { once: true });
    });
  }

  private tickWhileUsed(): void {
    this.timer ??= setInterval(() => {
      const since = performance.eventLoopUtilization(this.last);
      this.last = performance.eventLoopUtilization();
      this.account(since);
    }, TICK_MS).unref();
  }

  /**
   * Counts a tick's busy time (`active` milliseconds, `utilization` of the tick) against the projects whose
   * activities were running, started or ended in it, and gives the waiting ones their turn if it has come.
   */
  account(since: Pick<EventLoopUtilization, 'active' | 'utilization'>): void {
    this.ticks++;
    this.utilization = this.utilization * DECAY + since.utilization * (1 - DECAY);
    for (const [projectId, ms] of this.used) {
      const decayed = ms * DECAY;
      if (decayed < FORGOTTEN_MS && !this.running.has(projectId)) {
        this.used.delete(projectId);
        this.lastEdgeTick.delete(projectId);
      } else this.used.set(projectId, decayed);
    }
    const claims = new Map(this.running);
    for (const [projectId, n] of this.edges) claims.set(projectId, (claims.get(projectId) ?? 0) + n);
    this.edges.clear();
    const count = [...claims.values()].reduce((sum, n) => sum + n, 0);
    for (const [projectId, n] of claims) this.used.set(projectId, (this.used.get(projectId) ?? 0) + (since.active * n) / count);
    for (const check of [...this.waiting]) check();
    if (this.used.size === 0 && this.waiting.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/**
 * The least use at which a project joining the contenders whose use is `others` leaves none of those within
 * their share (at most OVER_SHARE of an even split) over it. Alone beside one project, three fifths of its use.
 */
export function leastHoldingNobody(others: number[]): number {
  if (others.length === 0) return 0;
  const total = others.reduce((sum, ms) => sum + ms, 0);
  const bar = others.length < 2 ? Infinity : (OVER_SHARE * total) / others.length;
  let least = 0;
  for (const ms of others) if (ms <= bar) least = Math.max(least, ((others.length + 1) * ms) / OVER_SHARE - total);
  // A hair above, so that rounding leaves nobody over the bar.
  return least > 0 ? least + 1e-6 : 0;
}

const PROJECT_OF_RUN = statement('project_of_run', 'SELECT project_id FROM runs WHERE id = $1');

// Runs whose project is remembered, so that a run's activities after its first cost no query.
const RUNS_REMEMBERED = 10_000;

/** The project of the run an activity is for, from the activity's first argument; null when it cannot be told. */
export interface ProjectOfActivity {
  (arg: unknown): Promise<string | null>;
  /** The project when it is already known, without asking the database; null otherwise. */
  known(arg: unknown): string | null;
  /** Keeps the project of a run read elsewhere (a run's bookkeeping): its next activities cost no query. */
  remember(runId: string, projectId: string): void;
}

/**
 * The project of the run an activity is for (its `runId`, or a network hop's `childRunId`), or null. The fairness
 * key a run's workflow carries is not on every activity's info (a model call's has none), so the run is read.
 * A database that cannot say whose run it is (an outage) answers null too: the activity meets the outage itself,
 * and no project's share holds it meanwhile.
 */
export function projectsOfRuns(db: Queryable): ProjectOfActivity {
  const remembered = new LRUCache<string, string>({ max: RUNS_REMEMBERED });
  const runOf = (arg: unknown): string | null => {
    const { runId, childRunId } = (arg ?? {}) as { runId?: unknown; childRunId?: unknown };
    return typeof runId === 'string' ? runId : typeof childRunId === 'string' ? childRunId : null;
  };
  const known = (arg: unknown): string | null => {
    const id = runOf(arg);
    return id ? (remembered.get(id) ?? null) : null;
  };
  const projectOf = async (arg: unknown): Promise<string | null> => {
    const id = runOf(arg);
    if (!id) return null;
    const seen = remembered.get(id);
    if (seen) return seen;
    const rows = await db
      .query<{ project_id: string }>(PROJECT_OF_RUN, [id])
      .then(({ rows }) => rows)
      .catch(() => []);
    if (rows[0]) remembered.set(id, rows[0].project_id);
    return rows[0]?.project_id ?? null;
  };
  const remember = (runId: string, projectId: string) => {
    remembered.set(runId, projectId);
  };
  return Object.assign(projectOf, { known, remember });
}

/**
 * Holds each activity of a run until its project's turn. Activities of no run start at once, and so do local
 * ones (a run's bookkeeping, inside its workflow task), which count against their project when it is already
 * known: finding it out would cost each run a query.
 */
export function fairShares(projectOf: ProjectOfActivity, shares: ProjectShares): ActivityInterceptorsFactory {
  return (ctx: Context) => {
    const inbound: ActivityInboundCallsInterceptor = {
      async execute(input, next) {
        if (ctx.info.isLocal) {
          const projectId = projectOf.known(input.args[0]);
          return projectId ? shares.runLocal(projectId, () => next(input)) : next(input);
        }
        const projectId = await projectOf(input.args[0]);
        if (!projectId) return next(input);
        return shares.run(
          projectId,
          () => next(input),
          ctx.cancellationSignal,
          () => ctx.heartbeat(),
        );
      },
    };
    return { inbound };
  };
}
