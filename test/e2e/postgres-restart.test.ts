import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { freePort, startPostgres, type RunningPostgres } from '../../cli/embedded.js';
import { Client, Connection } from '@temporalio/client';
import { extractionWorkflowId } from '../../workflows/extraction/client.js';
import { LONG_PDF_PAGES, textPdf } from '../support/pdf-fixtures.js';
import { newSecret } from '../../records/api-keys.js';
import { createDb } from '../../records/db.js';
import { migrate } from '../../records/migrate.js';
import { ApiClient, type ApiResponse } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { isolatedNamespace, scratch, temporal, testLog } from '../support/services.js';

// Where PostgreSQL is when a request is sent. Only requests sent while it is down must all be refused:
// a stop can begin mid-request, and a start can finish before it is reported.
type Phase = 'up' | 'stopping' | 'down' | 'starting';

interface Answer {
  /** Where the database was when the request was sent. */
  phase: Phase;
  request: string;
  status: number | 'no answer';
  retryAfter: string | null;
  code?: string;
  detail?: string;
}

const RESTARTS = 3;
// Each client pauses this long between its requests: steady load, not a flood of instant 503s.
const PACE_MS = 20;

/** Uploaders and readers that keep the API busy until stopped, recording every answer. */
function startLoad(client: ApiClient, phase: () => Phase, { uploaders = 4, readers = 2 } = {}) {
  const answers: Answer[] = [];
  const accepted: string[] = [];
  let running = true;

  async function send(request: string, call: () => Promise<ApiResponse>): Promise<ApiResponse | null> {
    const sent = phase();
    try {
      const response = await call();
      answers.push({
        phase: sent,
        request,
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        code: response.body?.error?.code,
      });
      return response;
    } catch (err) {
      answers.push({ phase: sent, request, status: 'no answer', retryAfter: null, detail: String((err as Error).cause ?? err) });
      return null;
    }
  }

  async function upload(uploader: number) {
    for (let n = 0; running; n++) {
      const data = Buffer.from(`uploader ${uploader}, upload ${n}\fits second page`);
      const response = await send('POST /v1/files', () =>
        client.upload({ file: { data, filename: `load-${uploader}-${n}.txt` }, purpose: 'context' }),
      );
      if (response?.status === 200) accepted.push(response.body.id);
      await pause(PACE_MS);
    }
  }

  async function read(reader: number) {
    for (let n = 0; running; n++) {
      const latest = accepted.at(-1);
      if (latest && n % 2 === reader % 2) await send('GET /v1/files/:id', () => client.get(`/v1/files/${latest}`));
      else await send('GET /v1/files', () => client.get('/v1/files?limit=5'));
      await pause(PACE_MS);
    }
  }

  const loops = [...Array.from({ length: uploaders }, (_, i) => upload(i)), ...Array.from({ length: readers }, (_, i) => read(i))];
  return {
    answers,
    accepted,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

describe('agentplane api and worker while PostgreSQL restarts under load', function () {
  this.timeout(300_000);
  const processes: CliProcess[] = [];
  let database: RunningPostgres;
  let api: CliProcess;
  let worker: CliProcess;
  let client: ApiClient;
  let namespace: string;

  before(async () => {
    // A PostgreSQL of its own: stopping it leaves the other suites' database alone.
    database = await startPostgres(join(await scratch, 'postgres-restart'), { durable: false });
    const db = createDb(database.url, { max: 1, log: testLog });
    await migrate(db).finally(() => db.end());
    const blobDir = join(await scratch, 'postgres-restart-blobs');
    await mkdir(blobDir, { recursive: true });
    const env = {
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: (await temporal()).address,
      TEMPORAL_NAMESPACE: (namespace = await isolatedNamespace('postgres-restart')),
      AGENTPLANE_BLOB_DIR: blobDir,
      AGENTPLANE_ADMIN_KEY: newSecret(),
    };
    const port = await freePort();
    api = runCli('api', { ...env, PORT: String(port), HOST: '127.0.0.1' });
    worker = runCli('worker', env);
    processes.push(api, worker);
    client = new ApiClient(`http://127.0.0.1:${port}`, env.AGENTPLANE_ADMIN_KEY);
    await eventually(
      async () => {
        assert.equal(api.child.exitCode, null, api.output());
        assert.equal((await client.get('/readyz')).status, 200);
      },
      { timeoutMs: 60_000, message: 'the api did not become ready' },
    );
  });

  after(async () => {
    for (const process of processes) {
      process.child.kill('SIGTERM');
      await process.exited;
    }
    await database?.stop();
  });

  it('answers 503 with Retry-After while the database is down, keeps both processes running, and processes every accepted upload', async () => {
    let phase: Phase = 'up';
    const load = startLoad(client, () => phase);
    const died = Promise.race([api.exited, worker.exited]).then(() =>
      assert.fail(`a process exited:\n${api.output()}\n${worker.output()}`),
    );
    const restarts = async () => {
      for (let restart = 1; restart <= RESTARTS; restart++) {
        const acceptedBefore = load.accepted.length;
        await eventually(() => assert.ok(load.accepted.length >= acceptedBefore + 5, 'too few uploads accepted'), {
          timeoutMs: 60_000,
          message: `uploads were not accepted before outage ${restart}`,
        });
        phase = 'stopping';
        await database.stop();
        phase = 'down';
        const answeredBefore = load.answers.length;
        await eventually(() => assert.ok(load.answers.length >= answeredBefore + 200, 'too few answers during the outage'), {
          timeoutMs: 60_000,
          message: `the load did not reach the API during outage ${restart}`,
        });
        const readiness = await client.get('/readyz');
        assert.equal(readiness.status, 503);
        assert.equal(readiness.body.checks.postgres, 'unavailable');
        phase = 'starting';
        await database.start();
        phase = 'up';
      }
      const acceptedBefore = load.accepted.length;
      await eventually(() => assert.ok(load.accepted.length >= acceptedBefore + 5, 'too few uploads accepted'), {
        timeoutMs: 60_000,
        message: 'the API did not recover after the last restart',
      });
    };
    try {
      await Promise.race([restarts(), died]);
    } finally {
      await load.stop();
    }

    assert.deepEqual(
      load.answers.filter((a) => a.status === 'no answer'),
      [],
      'every request was answered',
    );
    assert.deepEqual(
      load.answers.filter((a) => a.status !== 200 && a.status !== 503),
      [],
      'every answer was 200 or 503',
    );
    assert.deepEqual(
      load.answers.filter((a) => a.phase === 'down' && a.status !== 503),
      [],
      'every request sent during an outage was answered 503',
    );
    assert.deepEqual(
      load.answers.filter((a) => a.status === 503 && (a.code !== 'dependency_unavailable' || !(Number(a.retryAfter) > 0))),
      [],
      'every 503 is dependency_unavailable with Retry-After',
    );

    assert.equal(api.child.exitCode, null, api.output());
    assert.equal(worker.child.exitCode, null, worker.output());
    assert.equal((await client.get('/readyz')).status, 200);
    for (const id of load.accepted) {
      const file = await Promise.race([client.settledFile(id, 120_000), died]);
      assert.equal(file.status, 'processed', `${id}: ${JSON.stringify(file.last_error)} ${worker.output()}`);
    }
  });

  it('waits out an outage in the middle of a long PDF: every page is kept once, and no attempt is spent on the outage', async function () {
    this.timeout(300_000);
    const data = Buffer.from(await textPdf(LONG_PDF_PAGES, 8));
    const upload = await client.upload({ file: { data, filename: 'long.pdf' }, purpose: 'context' });
    assert.equal(upload.status, 200);
    const fileId: string = upload.body.id;
    const db = createDb(database.url, { max: 1, log: testLog });
    try {
      const stored = async () =>
        (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM file_pages WHERE file_id = $1', [fileId])).rows[0]!.n;
      await eventually(async () => assert.ok((await stored()) > 0, 'no pages stored yet'), {
        timeoutMs: 60_000,
        intervalMs: 20,
        message: 'the worker stored no pages',
      });
      const stoppedAt = Date.now();
      await database.stop();
      // The worker's output is kept in its last 20,000 characters: find the warning by its time, not its place.
      const noticed = () =>
        worker
          .output()
          .split('\n')
          .filter((line) => line.includes('the database is unavailable; the activity waits for it'))
          .some((line) => {
            try {
              return (JSON.parse(line) as { time: number }).time >= stoppedAt;
            } catch {
              return false; // the buffer's first line, cut
            }
          });
      await eventually(() => assert.ok(noticed(), 'no warning since the database stopped'), {
        timeoutMs: 60_000,
        message: 'the worker did not notice the outage',
      });
      await database.start();
      const file = await client.settledFile(fileId, 240_000);
      assert.equal(file.status, 'processed', JSON.stringify(file.last_error));
      assert.equal(file.extracted.pages, LONG_PDF_PAGES);
      const pages = await db.query<{ n: number; distinct: number }>(
        'SELECT count(*)::int AS n, count(DISTINCT page_number)::int AS distinct FROM file_pages WHERE file_id = $1',
        [fileId],
      );
      assert.deepEqual(pages.rows[0], { n: LONG_PDF_PAGES, distinct: LONG_PDF_PAGES });
    } finally {
      await db.end();
    }
    const connection = await Connection.connect({ address: (await temporal()).address });
    try {
      const history = await new Client({ connection, namespace }).workflow.getHandle(extractionWorkflowId(fileId)).fetchHistory();
      const attempts = (history.events ?? []).flatMap((e) =>
        e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt ?? 1] : [],
      );
      assert.deepEqual(attempts, [1, 1], 'each stage ran once, waiting through the outage');
    } finally {
      await connection.close();
    }
  });
});
