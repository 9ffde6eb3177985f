/**
 * A worker's activity slots among projects. Temporal gives a worker a fixed number of activities at once, and
 * an activity holds its slot until it ends, however little it does meanwhile. Tool calls and run starts wait on
 * hosts a tenant names (a tool's URL, an MCP server), and a host that never answers holds each call's slot until
 * its timeout: a project that made enough of those calls at once would hold every slot, and every other
 * project's model calls and tools would wait in Temporal's queue until they timed out.
 *
 * So a project may have at most a quarter of the slots in such calls at once on one worker. Its call past that
 * is not made, and its slot is free again at once. A call whose workflow waits out a refusal (`waitsForSlot`)
 * answers so, and its workflow sleeps and calls again, holding no slot: the refusal is none of its attempts.
 * Any other call (a run's workflow from before calls waited) fails, and Temporal retries it with the call's own
 * backoff; one that never finds room fails as it would on an unreachable host. A worker pool the operator runs
 * for one project has no other project to keep slots for. Webhook retries share their own worker's slots the
 * same way (`webhooks/activities.ts`).
 */
import { ApplicationFailure, type Context } from '@temporalio/activity';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import type { ProjectOfActivity } from './project-shares.js';

/** The shared queue's activities at once, on each worker. */
export const RUN_ACTIVITY_SLOTS = 100;
/** Of those, the most one project's calls to the hosts its agents name may hold. */
export const HOST_CALL_SLOTS_PER_PROJECT = RUN_ACTIVITY_SLOTS / 4;
/** The activities that wait on a tenant's hosts: tool calls, and starts that list MCP servers' tools. */
const HOST_CALLS = new Set(['callTool', 'startRun']);

export const SLOTS_TAKEN = 'project_slots_taken';
// A project refused again and again is logged once this often, not at every refusal.
const REPORT_EVERY_MS = 60_000;
/**
 * The refusals a second of a project on one worker past which its refused calls are asked to wait longer than
 * usual: each refusal costs the worker, Temporal and the run's history as much as a short activity, and a project
 * with a hundred calls waiting would otherwise ask a hundred times for each time one of them gets in.
 */
export const ASKS_PER_SECOND = 4;
// The span over which a project's refusals are counted: its rate of refusals decays by e over this long.
const REFUSAL_RATE_SPAN_MS = 2_000;
// The most times its usual wait a refused call is asked to wait (the longest wait bounds it as well).
const MOST_WAIT_FACTOR = 60;

export class SlotShares {
  private readonly held = new Map<string, number>();
  private readonly reported = new Map<string, number>();
  /** Each project's refusals a second, decayed over REFUSAL_RATE_SPAN_MS, as of when it was last refused. */
  private readonly refusalRates = new Map<string, { perSecond: number; at: number }>();

  /** `report` hears of a project's first refusal, and then at most once a minute. */
  constructor(
    readonly perProject: number,
    private readonly report: (projectId: string, perProject: number) => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Does `work` for `projectId` if the project has room, counting it while it lasts; refuses it otherwise. */
  async run<T>(projectId: string, work: () => Promise<T>): Promise<T> {
    const giveBack = this.take(projectId);
    if (!giveBack) throw this.refusal();
    try {
      return await work();
    } finally {
      giveBack();
    }
  }

  /** One of the project's slots, given back by calling the answer; null when the project holds its share already. */
  take(projectId: string): (() => void) | null {
    const held = this.held.get(projectId) ?? 0;
    if (held >= this.perProject) {
      this.refused(projectId);
      return null;
    }
    this.held.set(projectId, held + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = this.held.get(projectId)! - 1;
      if (left === 0) this.held.delete(projectId);
      else this.held.set(projectId, left);
    };
  }

  /** The failure a call refused its slot fails with, to be retried. */
  refusal(): ApplicationFailure {
    return ApplicationFailure.retryable(
      `The call was not made: ${this.perProject} calls of this project to the hosts its agents name are already under way on this worker, the most one project may have.`,
      SLOTS_TAKEN,
    );
  }

  /**
   * How many times its usual wait a refused call of `projectId` should wait: its project's refusals a second on
   * this worker ÷ `ASKS_PER_SECOND`, so that a burst of waiting calls spreads out; 1 for a project refused less
   * often than that.
   */
  waitFactor(projectId: string): number {
    const perSecond = this.refusalRate(projectId, this.now());
    return Math.min(MOST_WAIT_FACTOR, Math.max(1, Math.round((perSecond / ASKS_PER_SECOND) * 10) / 10));
  }

  /** The project's refusals a second as of `now`. */
  private refusalRate(projectId: string, now: number): number {
    const rate = this.refusalRates.get(projectId);
    return rate ? rate.perSecond * Math.exp(-(now - rate.at) / REFUSAL_RATE_SPAN_MS) : 0;
  }

  private refused(projectId: string): void {
    const now = this.now();
    this.refusalRates.set(projectId, { perSecond: this.refusalRate(projectId, now) + 1000 / REFUSAL_RATE_SPAN_MS, at: now });
    if (now - (this.reported.get(projectId) ?? -Infinity) < REPORT_EVERY_MS) return;
    this.reported.set(projectId, now);
    // Projects that stopped being refused are forgotten with the next report.
    for (const [project, at] of this.reported) if (now - at >= REPORT_EVERY_MS) this.reported.delete(project);
    for (const [project, { at }] of this.refusalRates) if (now - at >= REPORT_EVERY_MS) this.refusalRates.delete(project);
    this.report(projectId, this.perProject);
  }

  /** The calls under way, by project. */
  usage(): Map<string, number> {
    return new Map(this.held);
  }
}

/**
 * What a call whose workflow waits out a refusal (its input's `waitsForSlot`) answers when it is refused, in
 * place of its own answer: its workflow sleeps (`refusal-backoff.ts`) and calls again, and the refusal is none
 * of the call's attempts.
 */
export interface SlotRefusal {
  slotsTaken: {
    perProject: number;
    /**
     * How many times its usual wait the call should wait: more than 1 while its project's calls are refused
     * faster than `ASKS_PER_SECOND` on this worker, so that a burst of waiting calls spreads out. Absent from
     * refusals recorded before it was answered.
     */
    waitFactor?: number;
  };
}

/**
 * Refuses a project's host calls past its share of the slots, as a failure to retry, or as a `SlotRefusal` to
 * a call that waits one out; other activities, and local ones, start at once.
 */
export function slotShares(projectOf: ProjectOfActivity, shares: SlotShares): ActivityInterceptorsFactory {
  return (ctx: Context) => {
    const inbound: ActivityInboundCallsInterceptor = {
      async execute(input, next) {
        if (ctx.info.isLocal || !HOST_CALLS.has(ctx.info.activityType)) return next(input);
        const projectId = await projectOf(input.args[0]);
        if (!projectId) return next(input);
        const giveBack = shares.take(projectId);
        if (!giveBack) {
          if ((input.args[0] as { waitsForSlot?: unknown }).waitsForSlot)
            return { slotsTaken: { perProject: shares.perProject, waitFactor: shares.waitFactor(projectId) } } satisfies SlotRefusal;
          throw shares.refusal();
        }
        try {
          return await next(input);
        } finally {
          giveBack();
        }
      },
    };
    return { inbound };
  };
}
