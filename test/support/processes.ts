/** Agentplane's own CLI as child processes, for tests that kill, restart or signal them. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const cliPath = fileURLToPath(new URL('../../cli/agentplane.js', import.meta.url));

/**
 * AGENTPLANE_OUTBOUND_NETWORKS of every process the tests and benchmarks run: whatever a test registers as a
 * tool, an MCP server or a webhook endpoint (the contract fuzz registers any address), no request leaves the machine.
 */
export const LOOPBACK_NETWORKS = '127.0.0.0/8,::1/128';

export interface CliProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs `agentplane <command> [args]`. `cli` names another copy of the compiled CLI than this tree's;
 * `processGroup` starts it in a process group of its own, as a shell starts a command in a terminal, so
 * that a test can signal the whole group as the terminal's Ctrl-C does.
 */
export function runCli(
  command: string,
  env: Record<string, string>,
  options: { cli?: string; processGroup?: boolean; args?: string[] } = {},
): CliProcess {
  const child = spawn(process.execPath, [options.cli ?? cliPath, command, ...(options.args ?? [])], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      LOG_LEVEL: 'warn',
      AGENTPLANE_OUTBOUND_NETWORKS: LOOPBACK_NETWORKS,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.processGroup ?? false,
  });
  let output = '';
  const collect = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => output, exited };
}

/**
 * Resolves when a line of the process's output from now on matches `pattern`; the output kept by
 * `output()` is only its tail, which a noisy process can scroll past the line.
 */
export function lineSaid(process: CliProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve) => {
    let partial = '';
    const streams = [process.child.stdout!, process.child.stderr!];
    const read = (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      const line = lines.find((l) => pattern.test(l));
      if (line === undefined) return;
      for (const stream of streams) stream.off('data', read);
      resolve(line);
    };
    for (const stream of streams) stream.on('data', read);
  });
}
