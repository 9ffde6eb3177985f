/**
 * dev's services must not outlive dev, even when it is killed with SIGKILL and no handler runs: each one
 * has a guard process (cli/child-guard.ts) that stops it when dev dies, and a start finds any that were
 * left running anyway (a guard killed with its dev) through their pid files, and stops them first.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const guardProgram = fileURLToPath(new URL('./child-guard.js', import.meta.url));

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Starts a guard that sends `signal` to `pid` if this process dies; `stop()` retires the guard. */
export function guardAgainstOrphaning(pid: number, signal: NodeJS.Signals): { stop(): Promise<void> } {
  // Its own process group, so that a terminal's signals and a kill of dev's group leave it to do its job.
  const guard = spawn(process.execPath, [guardProgram, String(pid), signal], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  const exited = new Promise<void>((resolve) => guard.once('exit', () => resolve()));
  guard.once('error', () => {}); // the service runs unguarded rather than not at all
  return {
    async stop() {
      if (guard.exitCode !== null || guard.signalCode !== null || guard.pid === undefined) return;
      guard.kill('SIGTERM');
      await exited;
    },
  };
}

/** Sends `signal`, waits up to `graceMs` for the process to end, then SIGKILLs it. */
export async function stopProcess(pid: number, signal: NodeJS.Signals, graceMs = 30_000): Promise<void> {
  if (!signalProcess(pid, signal)) return;
  if (await endsWithin(pid, graceMs)) return;
  signalProcess(pid, 'SIGKILL');
  await endsWithin(pid, 10_000);
}

/**
 * Stops the process named on the first line of `pidFile` if it is still running and its command line
 * mentions `mention` (a pid file outlives its process, and the pid may since name another). Where the
 * command line cannot be read (no /proc), the program's own lock is left to refuse a second start.
 */
export async function stopStaleProcess(pidFile: string, mention: string, signal: NodeJS.Signals): Promise<boolean> {
  const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid) || !existsSync('/proc')) return false;
  const commandLine = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ');
  if (!commandLine.includes(mention)) return false;
  await stopProcess(pid, signal);
  return true;
}

function signalProcess(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

async function endsWithin(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}
