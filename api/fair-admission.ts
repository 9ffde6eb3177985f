/**
 * Fair admission: how many requests one API process works on at once, shared evenly among the projects
 * asking, in the manner of Kubernetes' API Priority and Fairness. A project's requests beyond its share wait
 * in a queue of its own and are let in turn about with the other projects' waiting ones, so a project that
 * sends a hundred heavy requests at once delays its own requests, not another project's. The share is the
 * process's requests at once divided among the projects active in the last second, at least one each; a
 * project alone has them all. A full queue, or a wait past its bound, answers 429 with Retry-After.
 *
 * A request holds its place only while the API works on it: waiting for a run to end, reading an upload
 * from the client or serving an event stream (bounded by its own slots, event-stream-slots.ts) gives the
 * place back (`idleWhile`, `Place.leave`).
 *
 * Places alone let a project that keeps a few requests going at every moment (a loop listing runs) take as
 * much of the process, and of the database and the CPU behind it, as it likes while places are free. So turns
 * are also taken by time, as the worker's are (workflows/project-shares.ts): the event loop's busy time is
 * counted against the projects holding places and decays by half every few seconds, and while the loop is
 * busy a new request of a project that has used more than its share waits in its queue, places free or not,
 * until the project is back within its share, the loop is no longer busy, or it has waited the longest a turn
 * by time may take. A project alone never waits for one, nor does a request coming back from a wait.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { Middleware } from 'koa';
import { Gauge } from 'prom-client';
import { callerOf, type ApiState } from './context.js';
import { RateLimitError } from './errors.js';
import type { ApiMetrics } from './metrics.js';

/** AGENTPLANE_API_*: the bounds of fair admission on one API process. */
export interface AdmissionLimits {
  /** AGENTPLANE_API_REQUESTS_AT_ONCE: requests one API process works on at once, shared among projects. */
  atOnce: number;
  /** AGENTPLANE_API_REQUESTS_QUEUED_PER_PROJECT: a project's requests waiting for their turn; more are answered 429. */
  queuedPerProject: number;
  /** AGENTPLANE_API_QUEUE_WAIT_SECONDS: the longest a request waits for its turn before it is answered 429. */
  queueWaitSeconds: number;
  /**
   * AGENTPLANE_API_FAIR_SHARE_BUSY_PERCENT ÷ 100: the event loop's utilisation (0 to 1) above which projects also
   * take turns by the time they have held places; at 1 they never do.
   */
  busyUtilization: number;
  /** AGENTPLANE_API_FAIR_SHARE_MAX_WAIT_MS: the longest a request waits for its project's turn by time; at 0 none does. */
  shareWaitMs: number;
}

export const DEFAULT_ADMISSION_LIMITS: AdmissionLimits = {
  atOnce: 8,
  queuedPerProject: 200,
  queueWaitSeconds: 30,
  busyUtilization: 0.2,
  shareWaitMs: 1_000,
};

// A project that asked this recently still counts when shares are reckoned: a client between two requests
// has not left, and the others' shares should not swell and shrink with each of its round trips.
const ACTIVE_MS = 1_000;
// A project refused for a full queue or a long wait may try again this soon: its earlier requests are being served.
const RETRY_AFTER_SECONDS = 1;
// Projects gone quiet are swept out when this many more than those working have gathered.
const ACTIVE_PROJECTS_KEPT = 1_000;
const TICK_MS = 100;
// The time a project held places halves in this long: its past weighs for a few seconds.
const HALF_LIFE_MS = 2_000;
const DECAY = 0.5 ** (TICK_MS / HALF_LIFE_MS);
// A project waits for its turn by time once it has held places a quarter longer than its share, so projects
// that use the process about as much as each other never hold each other up.
const OVER_SHARE = 1.25;
// A quiet project whose use has decayed below this many milliseconds of the loop is forgotten. Until then it is
// remembered: a project held for its turn goes quiet while it waits, and coming back with its past forgotten
// it would find the others over a share reckoned without its own use.
const FORGOTTEN_MS = 1;

/**
 * The least use at which a project joining the active ones whose use is `others` leaves none of those within
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

/** The client closed the connection while its request waited: there is no one to answer. */
class ClientGone extends Error {}

interface Waiter {
  admit(): void;
  /** When it began to wait; false for a request coming back from a wait, which never waits for a turn by time. */
  since: number | false;
}

interface ProjectTurns {
  working: number;
  queue: Waiter[];
  lastAskedAt: number;
  /** Milliseconds of the event loop's busy time counted against the project's places, decayed. */
  used: number;
}

/** One request's place: given back once, whatever happens to the request after. */
export interface Place {
  /** Gives the place back for `wait`, and waits for a place again once it settles. */
  idleWhile<T>(wait: () => Promise<T>): Promise<T>;
  /** Gives the place back for good: the rest of the request is bounded elsewhere, or is not the API's work. */
  leave(): void;
}

/** Nothing working or waiting, and nothing asked for long enough not to count among the active projects. */
const quiet = (project: ProjectTurns, now: number): boolean =>
  project.working === 0 && project.queue.length === 0 && now - project.lastAskedAt >= ACTIVE_MS;

export class FairAdmission {
  private readonly projects = new Map<string, ProjectTurns>();
  private working = 0;
  /** Where the next turn is looked for, so no project is always looked at first. */
  private turn = 0;
  /** The event loop's utilisation, decayed. */
  private utilization = 0;
  private lastLoop: EventLoopUtilization = performance.eventLoopUtilization();
  /** Above this use a project waits for its turn by time; reckoned on each tick. */
  private fairUse = Infinity;
  private ticker: NodeJS.Timeout | undefined;

  /** `clock` tells the time in milliseconds (Date.now, unless a test keeps its own). */
  constructor(
    readonly limits: AdmissionLimits = DEFAULT_ADMISSION_LIMITS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Projects this process remembers: working, waiting, or quiet with their use yet to decay. */
  get remembered(): number {
    return this.projects.size;
  }

  /** Requests being worked on now, and waiting for their turn, on this process. */
  get load(): { working: number; queued: number } {
    let queued = 0;
    for (const project of this.projects.values()) queued += project.queue.length;
    return { working: this.working, queued };
  }

  /**
   * Waits for a place for one of `projectId`'s requests. `bounded` (a request arriving) is refused with 429
   * when the project's queue is full or the wait too long; a request coming back from a wait is not.
   */
  async enter(projectId: string, { bounded = true, signal }: { bounded?: boolean; signal?: AbortSignal } = {}): Promise<void> {
    const now = this.clock();
    const project = this.projectOf(projectId);
    if (quiet(project, now)) this.join(project, now);
    project.lastAskedAt = now;
    this.tickWhileUsed();
    if (project.queue.length === 0 && this.hasRoomFor(project, this.shareAt(now)) && !(bounded && this.overShare(project))) {
      this.take(project);
      return;
    }
    if (bounded && project.queue.length >= this.limits.queuedPerProject) {
      throw RateLimitError(
        'too_many_requests_queued',
        `This project already has ${project.queue.length} requests waiting for their turn on this server; send fewer at once.`,
        RETRY_AFTER_SECONDS,
      );
    }
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        since: bounded && this.clock(),
        admit: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', abandon);
          resolve();
        },
      };
      const drop = (err: Error) => {
        const at = project.queue.indexOf(waiter);
        if (at < 0) return;
        project.queue.splice(at, 1);
        signal?.removeEventListener('abort', abandon);
        clearTimeout(timer);
        this.forgetIfIdle(projectId, project, this.clock());
        reject(err);
      };
      const abandon = () => drop(new ClientGone());
      const timer = bounded
        ? setTimeout(
            () =>
              drop(
                RateLimitError(
                  'request_queue_timeout',
                  `This project's requests waited ${this.limits.queueWaitSeconds}s for their turn on this server; send fewer at once.`,
                  RETRY_AFTER_SECONDS,
                ),
              ),
            this.limits.queueWaitSeconds * 1000,
          )
        : undefined;
      signal?.addEventListener('abort', abandon, { once: true });
      // A request coming back from a wait was let in once already: it goes before its project's new ones.
      if (bounded) project.queue.push(waiter);
      else project.queue.unshift(waiter);
    });
  }

  /** Gives back a place of `projectId`'s, and lets in whoever's turn it is. */
  exit(projectId: string): void {
    const project = this.projects.get(projectId);
    if (!project) return;
    project.working -= 1;
    this.working -= 1;
    this.forgetIfIdle(projectId, project, this.clock());
    this.letIn();
  }

  private projectOf(projectId: string): ProjectTurns {
    let project = this.projects.get(projectId);
    if (!project) {
      project = { working: 0, queue: [], lastAskedAt: -Infinity, used: 0 };
      this.projects.set(projectId, project);
    }
    return project;
  }

  /**
   * A project that comes to ask (new to this process, or back from quiet) counts from then on as having used at
   * least the least at which its coming holds up none of the active projects within their share, as the worker
   * places one (workflows/project-shares.ts). Counted from what little it had, it would leave them over a share
   * reckoned with it, held for the time they had the process to themselves. No more than that least: from then
   * on a project that holds places longer than the others, newcomer or not, waits for its turns.
   */
  private join(project: ProjectTurns, now: number): void {
    const others: number[] = [];
    for (const other of this.projects.values()) if (other !== project && !quiet(other, now)) others.push(other.used);
    project.used = Math.max(project.used, leastHoldingNobody(others));
  }

  private activeProjects(now: number): number {
    let active = 0;
    for (const project of this.projects.values()) if (!quiet(project, now)) active += 1;
    return Math.max(1, active);
  }

  /** Places each project may hold while the others ask too. */
  private shareAt(now: number): number {
    return Math.max(1, Math.floor(this.limits.atOnce / this.activeProjects(now)));
  }

  private hasRoomFor(project: ProjectTurns, share: number): boolean {
    return this.working < this.limits.atOnce && project.working < share;
  }

  /** Whether the project's next new request waits for its turn by time: it has held places past its share. */
  private overShare(project: ProjectTurns): boolean {
    return project.used > this.fairUse;
  }

  /** Whether a project's first waiting request may be let in now, a place being free for it. */
  private mayLetIn(project: ProjectTurns, now: number): boolean {
    const since = project.queue[0]!.since;
    return since === false || !this.overShare(project) || now - since >= this.limits.shareWaitMs;
  }

  private tickWhileUsed(): void {
    if (this.ticker || this.limits.busyUtilization >= 1 || this.limits.shareWaitMs <= 0) return;
    this.lastLoop = performance.eventLoopUtilization();
    this.ticker = setInterval(() => {
      const since = performance.eventLoopUtilization(this.lastLoop);
      this.lastLoop = performance.eventLoopUtilization();
      this.account(since);
    }, TICK_MS).unref();
  }

  /**
   * Counts a tick's busy time (`active` milliseconds, `utilization` of the tick) against the projects holding
   * places, in proportion to how many each holds; reckons the use above which a project waits (while the loop
   * is busy, an even split among the active projects, a quarter over); and lets in the waiting requests whose
   * turn that brings.
   */
  account(since: Pick<EventLoopUtilization, 'active' | 'utilization'>): void {
    this.utilization = this.utilization * DECAY + since.utilization * (1 - DECAY);
    const now = this.clock();
    let contenders = 0;
    let total = 0;
    let remembered = false;
    for (const [projectId, project] of this.projects) {
      project.used = project.used * DECAY + (this.working > 0 ? (since.active * project.working) / this.working : 0);
      if (this.forgetIfIdle(projectId, project, now)) continue;
      if (project.used >= 1 || project.working > 0 || project.queue.length > 0) remembered = true;
      if (!quiet(project, now)) {
        contenders += 1;
        total += project.used;
      }
    }
    this.fairUse = this.utilization > this.limits.busyUtilization && contenders > 1 ? (OVER_SHARE * total) / contenders : Infinity;
    this.letIn();
    if (!remembered) {
      clearInterval(this.ticker);
      this.ticker = undefined;
      this.utilization = 0;
      this.fairUse = Infinity;
    }
  }

  private take(project: ProjectTurns): void {
    project.working += 1;
    this.working += 1;
  }

  /** Lets waiting requests in, taking the projects in turn from where the last turn ended. */
  private letIn(): void {
    const now = this.clock();
    const share = this.shareAt(now);
    for (let admitted = true; admitted && this.working < this.limits.atOnce;) {
      admitted = false;
      const waiting = [...this.projects.values()].filter((project) => project.queue.length > 0);
      for (let i = 0; i < waiting.length && this.working < this.limits.atOnce; i++) {
        const project = waiting[(this.turn + i) % waiting.length]!;
        if (!this.hasRoomFor(project, share) || !this.mayLetIn(project, now)) continue;
        this.turn = (this.turn + i + 1) % Math.max(1, waiting.length);
        this.take(project);
        project.queue.shift()!.admit();
        admitted = true;
        break;
      }
    }
  }

  /**
   * A project with nothing here, quiet long enough not to count, and whose use has decayed, is forgotten; its
   * memory is returned. Whether it was.
   */
  private forgetIfIdle(projectId: string, project: ProjectTurns, now: number): boolean {
    const forgotten = quiet(project, now) && project.used < FORGOTTEN_MS;
    if (forgotten) this.projects.delete(projectId);
    // Past that many quiet ones (projects that went quiet while others were busy), all are forgotten at once,
    // their use with them: what one process remembers stays bounded, however many projects ask.
    if (this.projects.size > this.working + ACTIVE_PROJECTS_KEPT) {
      for (const [id, other] of this.projects) if (quiet(other, now)) this.projects.delete(id);
    }
    return forgotten;
  }

  /** A place for one request, held from now. */
  placeFor(projectId: string): Place {
    let held = true;
    const give = () => {
      if (!held) return;
      held = false;
      this.exit(projectId);
    };
    return {
      idleWhile: async <T>(wait: () => Promise<T>): Promise<T> => {
        if (!held) return wait();
        give();
        try {
          return await wait();
        } finally {
          await this.enter(projectId, { bounded: false });
          held = true;
        }
      },
      leave: give,
    };
  }
}

/** Runs `wait` without holding the request's place (if it holds one), and takes a place again after it. */
export function idleWhile<T>(ctx: { state: ApiState }, wait: () => Promise<T>): Promise<T> {
  const place = ctx.state.place;
  return place ? place.idleWhile(wait) : wait();
}

/** After authentication: each request waits for its project's turn, and holds its place until it is answered. */
export function admitFairly(admission: FairAdmission, metrics: ApiMetrics): Middleware<ApiState> {
  const gauges = [
    ['working', 'Requests this API process is working on now (AGENTPLANE_API_REQUESTS_AT_ONCE at most).'],
    ['queued', "Requests waiting for their project's turn on this API process."],
  ] as const;
  for (const [measure, help] of gauges)
    new Gauge({
      name: `agentplane_api_requests_${measure}`,
      help,
      registers: [metrics.registry],
      collect() {
        this.set(admission.load[measure]);
      },
    });
  return async (ctx, next) => {
    const { projectId } = callerOf(ctx);
    const gone = new AbortController();
    const onClose = () => gone.abort();
    ctx.res.once('close', onClose);
    try {
      await admission.enter(projectId, { signal: gone.signal });
    } catch (err) {
      if (!(err instanceof ClientGone)) throw err;
      ctx.status = 408;
      return;
    } finally {
      ctx.res.off('close', onClose);
    }
    const place = (ctx.state.place = admission.placeFor(projectId));
    try {
      await next();
    } finally {
      place.leave();
    }
  };
}
