import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../cli/embedded.js';
import { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { runCli, type CliProcess } from '../support/processes.js';

/**
 * Processes whose command line names `dir`: what `dev` started from its data directory. A process whose parent
 * is one of them is not counted: PostgreSQL forks a backend for each connection, which bears the server's
 * command line until it names itself.
 */
async function processesUsing(dir: string): Promise<string[]> {
  const found = new Map<string, { parent: string; line: string }>();
  for (const pid of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes(dir) || Number(pid) === process.pid) continue;
    // /proc/<pid>/stat: `pid (name) state ppid …`, the name in parentheses possibly holding spaces.
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const parent = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] ?? '';
    found.set(pid, { parent, line: `${pid}: ${cmdline.replaceAll('\0', ' ')}` });
  }
  return [...found.values()].filter(({ parent }) => !found.has(parent)).map(({ line }) => line);
}

/** Pids of the processes whose NUL-separated command line contains one of `fragments`. */
async function processesNaming(...fragments: string[]): Promise<number[]> {
  const found: number[] = [];
  for (const pid of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (fragments.some((fragment) => `${cmdline}\0`.includes(fragment))) found.push(Number(pid));
  }
  return found;
}

describe('agentplane dev (npm start)', function () {
  this.timeout(240_000);
  let dataDir: string;
  let port: number;
  let running: CliProcess | undefined;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'agentplane-dev-')); // private (0700), as mktemp -d makes it
    port = await freePort();
  });

  /** Stops the dev a test left running (one that failed, or did not start in time), killing it if it will not stop. */
  async function stopLeftover(): Promise<void> {
    const left = running;
    if (left) await stopDev(left).catch(() => left.child.kill('SIGKILL'));
  }

  // A failed test must not leave its services holding the data directory for the next one.
  afterEach(stopLeftover);

  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  async function startDev(
    env: Record<string, string> = {},
    options: { processGroup?: boolean } = {},
  ): Promise<{ process: CliProcess; line: string }> {
    const dev = runCli('dev', { PORT: String(port), AGENTPLANE_DATA_DIR: dataDir, ...env }, options);
    running = dev;
    const line = await eventually(
      () => {
        if (dev.child.exitCode !== null) throw new Error(`dev exited early:\n${dev.output()}`);
        const match = dev
          .output()
          .split('\n')
          .find((l) => l.startsWith('Agentplane is running at'));
        assert.ok(match, 'no startup line yet');
        return match;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: 'agentplane dev did not start' },
    );
    return { process: dev, line };
  }

  async function stopDev(dev: CliProcess): Promise<void> {
    running = undefined;
    dev.child.kill('SIGINT');
    const { code } = await dev.exited;
    assert.equal(code, 0, dev.output());
  }

  it('starts everything with no outside services, prints the URL and where the admin key is, and keeps data across a restart', async () => {
    const first = await startDev();
    const keyFile = join(dataDir, 'admin-key');
    assert.match(first.line, new RegExp(`http://localhost:${port}`));
    assert.ok(first.line.includes(keyFile), first.line);
    assert.equal((await stat(keyFile)).mode & 0o777, 0o600, 'the admin key file is private');
    const key = (await readFile(keyFile, 'utf8')).trim();
    const client = new ApiClient(`http://127.0.0.1:${port}`, key);

    assert.equal((await client.get('/readyz')).status, 200);
    const upload = await client.upload({ file: { data: Buffer.from('kept\facross restarts'), filename: 'kept.txt' }, purpose: 'context' });
    assert.equal(upload.status, 200);
    assert.equal((await client.settledFile(upload.body.id)).status, 'processed');

    await stopDev(first.process);
    assert.deepEqual(await processesUsing(dataDir), [], 'Ctrl-C stops every child process');

    const second = await startDev();
    const kept = await client.get(`/v1/files/${upload.body.id}`);
    assert.equal(kept.status, 200);
    assert.equal(kept.body.status, 'processed');
    assert.equal(kept.body.extracted.pages, 2);
    const again = await client.upload({ file: { data: Buffer.from('after the restart'), filename: 'new.txt' }, purpose: 'attachment' });
    assert.equal((await client.settledFile(again.body.id)).status, 'processed');
    await stopDev(second.process);
    assert.deepEqual(await processesUsing(dataDir), []);
  });

  it("stops cleanly on a terminal's Ctrl-C, which reaches Temporal and PostgreSQL as well, and releases the data directory", async () => {
    const { process: dev } = await startDev({}, { processGroup: true });
    running = undefined;
    process.kill(-dev.child.pid!, 'SIGINT');
    const { code } = await dev.exited;
    assert.equal(code, 0, dev.output());
    assert.doesNotMatch(dev.output(), /stop failed/);
    assert.equal(existsSync(join(dataDir, 'agentplane.pid')), false, 'every stop ran, the last releasing the data directory');
    assert.deepEqual(await processesUsing(dataDir), []);
  });

  it('leaves neither Temporal nor PostgreSQL running when killed with SIGKILL, and starts again on the same data directory', async () => {
    const { process: killed } = await startDev();
    assert.ok((await processesUsing(dataDir)).length >= 2, 'Temporal and PostgreSQL run from the data directory');
    running = undefined;
    killed.child.kill('SIGKILL');
    await killed.exited;
    await eventually(async () => assert.deepEqual(await processesUsing(dataDir), []), {
      timeoutMs: 30_000,
      intervalMs: 200,
      message: 'the services of a killed dev kept running',
    });

    const { process: again } = await startDev();
    const key = (await readFile(join(dataDir, 'admin-key'), 'utf8')).trim();
    assert.equal((await new ApiClient(`http://127.0.0.1:${port}`, key).get('/readyz')).status, 200);
    await stopDev(again);
  });

  it('stops what a killed dev left running when its guards were killed too, then starts', async () => {
    const { process: killed } = await startDev();
    const services = (await processesUsing(dataDir)).map((line) => line.split(':')[0]!);
    const guards = await processesNaming(...services.map((pid) => `child-guard.js\0${pid}\0`));
    assert.equal(guards.length, services.length, 'each service has its guard');
    running = undefined;
    for (const pid of [...guards, killed.child.pid!]) process.kill(pid, 'SIGKILL');
    await killed.exited;
    // PostgreSQL keeps running with nobody left to stop it. Temporal may end by itself: Go ends a program that writes
    // to a standard stream nobody reads any more, as its log is once dev is gone.
    const left = await processesUsing(dataDir);
    assert.ok(
      left.some((line) => line.includes('/postgres -D')),
      `with no guard left, PostgreSQL keeps running; left: ${left.join('\n')}`,
    );

    const { process: again } = await startDev();
    const key = (await readFile(join(dataDir, 'admin-key'), 'utf8')).trim();
    assert.equal((await new ApiClient(`http://127.0.0.1:${port}`, key).get('/readyz')).status, 200);
    for (const pid of services)
      assert.ok(!(await processesUsing(dataDir)).some((line) => line.startsWith(`${pid}:`)), `${pid} was stopped`);
    await stopDev(again);
  });

  it('starts in a private data directory (0700) inside a private parent (0700), and keeps it closed to other users', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'agentplane-private-'));
    const privateDir = join(parent, 'data');
    try {
      await mkdir(privateDir, { mode: 0o700 });
      assert.equal((await stat(parent)).mode & 0o777, 0o700);
      const { process: dev } = await startDev({ AGENTPLANE_DATA_DIR: privateDir });
      const key = (await readFile(join(privateDir, 'admin-key'), 'utf8')).trim();
      assert.equal((await new ApiClient(`http://127.0.0.1:${port}`, key).get('/readyz')).status, 200);
      assert.equal((await stat(privateDir)).mode & 0o007, 0, 'other users still cannot enter the data directory');
      await stopDev(dev);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });

  describe('with one dev running', () => {
    const key = `ap_${'k'.repeat(32)}`;
    let first: { process: CliProcess; line: string } | undefined;

    before(async () => {
      first = await startDev({ AGENTPLANE_ADMIN_KEY: key });
      // Kept for every test of this group: the group stops it, not each test.
      running = undefined;
    });

    after(async () => {
      if (first) await stopDev(first.process);
      else await stopLeftover();
    });

    it('uses AGENTPLANE_ADMIN_KEY when it is set', async () => {
      assert.match(first!.line, /AGENTPLANE_ADMIN_KEY/);
      const client = new ApiClient(`http://127.0.0.1:${port}`, key);
      assert.equal((await client.get('/v1/files')).status, 200);
    });

    it('refuses a second dev on the same data directory, naming the one running', async () => {
      const second = runCli('dev', { PORT: String(await freePort()), AGENTPLANE_DATA_DIR: dataDir });
      assert.equal((await second.exited).code, 1);
      assert.match(second.output(), new RegExp(`another agentplane dev \\(pid ${first!.process.child.pid}\\) is using ${dataDir}`));
      assert.equal((await new ApiClient(`http://127.0.0.1:${port}`).get('/healthz')).status, 200, 'the first keeps running');
    });

    it('names the port when it is taken before starting anything, and leaves nothing running', async () => {
      const otherDir = await mkdtemp(join(tmpdir(), 'agentplane-dev-'));
      try {
        const second = runCli('dev', { PORT: String(port), AGENTPLANE_DATA_DIR: otherDir });
        assert.equal((await second.exited).code, 1);
        assert.match(second.output(), new RegExp(`127\\.0\\.0\\.1:${port} is already in use; set PORT`));
        assert.deepEqual(await processesUsing(otherDir), []);
        assert.equal(existsSync(join(otherDir, 'postgres')), false, 'the port is checked before PostgreSQL is started');
      } finally {
        await rm(otherDir, { recursive: true, force: true });
      }
      assert.equal((await new ApiClient(`http://127.0.0.1:${port}`).get('/healthz')).status, 200, 'the first keeps running');
    });
  });

  it('refuses to start the api without its services, naming each missing variable', async () => {
    const api = runCli('api', {});
    const { code } = await api.exited;
    assert.equal(code, 1);
    for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'S3_ENDPOINT']) assert.ok(api.output().includes(name), api.output());
  });
});
