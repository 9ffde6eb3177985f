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

export class SlotShares {
  private readonly held = new Map<string, number>();
  private readonly reported = new Map<string, number>();

  /** `report` hears of a project's first refusal, and then at most once a minute. */
  constructor(
    readonly perProject: number,
    private readonly report: (projectId: string, perProject: number) => void = () => undefined,
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

  private refused(projectId: string): void {
    const now = Date.now();
    if (now - (this.reported.get(projectId) ?? -Infinity) < REPORT_EVERY_MS) return;
    this.reported.set(projectId, now);
    // Projects that stopped being refused are forgotten with the next report.
    for (const [project, at] of this.reported) if (now - at >= REPORT_EVERY_MS) this.reported.delete(project);
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
  slotsTaken: { perProject: number };
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
            return { slotsTaken: { perProject: shares.perProject } } satisfies SlotRefusal;
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
