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
import { LONGEST_REFUSAL_WAIT_MS } from './refusal-backoff.js';
import type { RunActivities } from './runs/activities.js';

/** The shared queue's activities at once, on each worker. */
export const RUN_ACTIVITY_SLOTS = 100;
/** Of those, the most one project's calls to the hosts its agents name may hold. */
export const HOST_CALL_SLOTS_PER_PROJECT = RUN_ACTIVITY_SLOTS / 4;
/** The activities that wait on a tenant's hosts: tool calls, and starts that list MCP servers' tools. */
const HOST_CALLS = new Set<string>(['callTool', 'startRun'] satisfies (keyof RunActivities)[]);

export const SLOTS_TAKEN = 'project_slots_taken';
// A project refused again and again is logged once this often, not at every refusal.
const REPORT_EVERY_MS = 60_000;
/**
 * The asks a second that a project's refused calls together make of one worker, once more of them wait than
 * this: each ask costs the worker, Temporal and the run's history as much as a short activity, and a project
 * with a hundred calls waiting would otherwise ask a hundred times for each time one of them gets in.
 */
export const ASKS_PER_SECOND = 4;
// The most times its usual wait a refused call is asked to wait (the longest wait bounds it as well).
const MOST_WAIT_FACTOR = 60;
// So few calls waiting ask at their usual pace: their waits double from a second, and together they soon ask
// less often than ASKS_PER_SECOND.
const FEW_WAITING = 2 * ASKS_PER_SECOND;
// Waiting calls past this many ask no less often: their wait is at its most already.
const MOST_WAITING_COUNTED = ASKS_PER_SECOND * MOST_WAIT_FACTOR;
// A refused call asks again within the longest wait; one not seen for longer got in or ended.
const WAITING_FOR_MS = LONGEST_REFUSAL_WAIT_MS + 5_000;

/** A call asking for a slot: the same `id` each time it asks again, and the run it is for, if any. */
export interface CallAsking {
  id: string;
  runId?: string;
}

interface WaitingCall {
  /** When it was last refused. */
  at: number;
  runId?: string;
}

export class SlotShares {
  private readonly held = new Map<string, number>();
  private readonly reported = new Map<string, number>();
  /** Each project's calls waiting to ask again, by call: the longest-waiting first. */
  private readonly waiting = new Map<string, Map<string, WaitingCall>>();
  /** The waiting calls of each run, so that a run's end forgets them at once. */
  private readonly waitingOfRun = new Map<string, { projectId: string; calls: Set<string> }>();
  private lastSweep = -Infinity;
  private unnamed = 0;

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

  /**
   * One of the project's slots, given back by calling the answer; null when the project holds its share already.
   * `call` names the call asking (the same each time it asks again) and its run, so that its project's calls
   * waiting are counted once each.
   */
  take(projectId: string, call?: CallAsking): (() => void) | null {
    const held = this.held.get(projectId) ?? 0;
    if (held >= this.perProject) {
      this.refused(projectId, call ?? { id: `unnamed ${++this.unnamed}` });
      return null;
    }
    if (call) this.forget(projectId, call.id);
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
   * How many times its usual wait a refused call of `projectId` should wait: the project's calls waiting on this
   * worker ÷ `ASKS_PER_SECOND`, so that together they ask about that often whatever their number; 1 while only a
   * few wait.
   */
  waitFactor(projectId: string): number {
    const waiting = this.waitingOf(projectId, this.now());
    if (waiting <= FEW_WAITING) return 1;
    return Math.min(MOST_WAIT_FACTOR, Math.round((waiting / ASKS_PER_SECOND) * 10) / 10);
  }

  /** The calls of a run that has ended wait no more. */
  forgetRun(runId: string): void {
    const run = this.waitingOfRun.get(runId);
    if (run) for (const call of run.calls) this.forget(run.projectId, call);
  }

  /** The project's calls refused within the longest wait, forgetting those refused before. */
  private waitingOf(projectId: string, now: number): number {
    const calls = this.waiting.get(projectId);
    if (!calls) return 0;
    for (const [call, { at }] of calls) {
      if (now - at < WAITING_FOR_MS) break;
      this.forget(projectId, call);
    }
    return calls.size;
  }

  private forget(projectId: string, call: string): void {
    const calls = this.waiting.get(projectId);
    const runId = calls?.get(call)?.runId;
    if (!calls?.delete(call)) return;
    if (calls.size === 0) this.waiting.delete(projectId);
    const run = runId === undefined ? undefined : this.waitingOfRun.get(runId);
    run?.calls.delete(call);
    if (run?.calls.size === 0) this.waitingOfRun.delete(runId!);
  }

  private refused(projectId: string, call: CallAsking): void {
    const now = this.now();
    // Last refused, so last in the map's order: the longest-waiting stay first, to be forgotten first.
    this.forget(projectId, call.id);
    const calls = this.waiting.get(projectId) ?? new Map<string, WaitingCall>();
    this.waiting.set(projectId, calls);
    calls.set(call.id, { at: now, runId: call.runId });
    if (call.runId !== undefined) {
      const run = this.waitingOfRun.get(call.runId) ?? { projectId, calls: new Set<string>() };
      this.waitingOfRun.set(call.runId, run);
      run.calls.add(call.id);
    }
    if (calls.size > MOST_WAITING_COUNTED) this.forget(projectId, calls.keys().next().value!);
    if (now - this.lastSweep >= WAITING_FOR_MS) {
      this.lastSweep = now;
      for (const project of [...this.waiting.keys()]) this.waitingOf(project, now);
    }
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
  slotsTaken: {
    perProject: number;
    /**
     * How many times its usual wait the call should wait: more than 1 while many of its project's calls wait on
     * this worker (`SlotShares.waitFactor`), so that a burst of waiting calls spreads out. Absent from refusals
     * recorded before it was answered.
     */
    waitFactor?: number;
  };
}

/** The run an activity is for, if its input names one. */
function runOf(input: unknown): string | undefined {
  const { runId } = (input ?? {}) as { runId?: unknown };
  return typeof runId === 'string' ? runId : undefined;
}

/** The call an activity makes, the same each time it asks again: its run's and step's. */
function callOf(activityType: string, input: unknown): CallAsking | undefined {
  const runId = runOf(input);
  const { stepIndex } = (input ?? {}) as { stepIndex?: unknown };
  return runId === undefined ? undefined : { id: `${activityType} ${runId} ${String(stepIndex ?? '')}`, runId };
}

// The activity that ends a run (on the worker whose workflow task ends it), after which its calls wait no more.
const RUN_END: keyof RunActivities = 'endRun';

/**
 * Refuses a project's host calls past its share of the slots, as a failure to retry, or as a `SlotRefusal` to
 * a call that waits one out; other activities, and local ones, start at once.
 */
export function slotShares(projectOf: ProjectOfActivity, shares: SlotShares): ActivityInterceptorsFactory {
  return (ctx: Context) => {
    const inbound: ActivityInboundCallsInterceptor = {
      async execute(input, next) {
        if (ctx.info.activityType === RUN_END) {
          const runId = runOf(input.args[0]);
          return next(input).finally(() => runId && shares.forgetRun(runId));
        }
        if (ctx.info.isLocal || !HOST_CALLS.has(ctx.info.activityType)) return next(input);
        const projectId = await projectOf(input.args[0]);
        if (!projectId) return next(input);
        const giveBack = shares.take(projectId, callOf(ctx.info.activityType, input.args[0]));
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
