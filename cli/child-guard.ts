/**
 * Stops one service of `agentplane dev` (Temporal, PostgreSQL) when dev dies without stopping it, even by
 * SIGKILL, which no handler sees: dev holds this program's stdin, and the kernel closes it when dev dies.
 *
 *   node child-guard.js <pid> <signal>    on end of input, send <signal> to <pid>, then exit
 *
 * dev stops the guard (SIGTERM) before or after stopping the service itself, in order.
 */
const [pidText, signal] = process.argv.slice(2);
const pid = Number(pidText);
if (!Number.isInteger(pid) || pid <= 0 || !signal?.startsWith('SIG')) {
  console.error('usage: child-guard <pid> <signal>');
  process.exit(2);
}

// A terminal's Ctrl-C or hang-up reaches the whole process group; it is dev's to act on, not this guard's.
process.on('SIGINT', () => {});
process.on('SIGHUP', () => {});

function stopGuarded(): void {
  try {
    process.kill(pid, signal as NodeJS.Signals);
  } catch {
    // Already gone.
  }
  process.exit(0);
}
process.stdin.on('end', stopGuarded);
process.stdin.on('error', stopGuarded);
process.stdin.resume();

// Once the guarded process has ended on its own, its pid may later name another process: never signal it.
setInterval(() => {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') process.exit(0);
  }
}, 500);
