import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { startTestApi, newTenant, type TestApi } from '../support/api.js';
import { isolatedDatabase, isolatedNamespace } from '../support/services.js';
import { eventually } from '../support/eventually.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { eventsFor, recordEvent } from '../../records/events.js';
import { newId } from '../../records/ids.js';
import type { Db } from '../../records/db.js';
import { pagesOf } from '../../records/files.js';
import { extractionWorkflowId } from '../../workflows/extraction/client.js';
import { PDF_BATCH_PAGES } from '../../workflows/extraction/pdf-stage.js';
import { LONG_PDF_PAGES, textPdf } from '../support/pdf-fixtures.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { ABANDONED_ATTEMPT_ERROR } from '../../workflows/webhooks/activities.js';
import type { components } from '../../api/generated/openapi.js';

describe('a worker killed mid-work', function () {
  this.timeout(180_000);
  let api: TestApi;
  let namespace: string;
  // Its own database as well as its own namespace: the other suites' workers dispatch the webhook deliveries of
  // every project in theirs, and this suite's attempts must be made by the workers it starts and kills.
  let database: { url: string; db: Db };
  const workers: CliProcess[] = [];

  before(async () => {
    namespace = await isolatedNamespace('worker-crash');
    database = await isolatedDatabase('agentplane_worker_crash');
    api = await startTestApi({ worker: false, namespace, db: database.db });
  });

  after(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await api?.stop();
  });

  async function startWorker(): Promise<CliProcess> {
    const worker = runCli('worker', {
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: api.temporalAddress,
      TEMPORAL_NAMESPACE: namespace,
      AGENTPLANE_BLOB_DIR: api.blobDir,
      AGENTPLANE_WEBHOOK_ALLOW_PRIVATE: 'true',
      AGENTPLANE_WEBHOOK_RETRY_INITIAL_MS: '200',
      AGENTPLANE_WEBHOOK_MAX_ATTEMPTS: '3',
    });
    workers.push(worker);
    return worker;
  }

  it('(SIGKILL while storing its results) is retried on a restarted worker and the file reaches processed exactly once', async () => {
    const { db } = database;
    const tenant = await newTenant(api, 'worker-crash');
    const upload = await tenant.admin.upload({ file: { data: Buffer.from('first\fsecond'), filename: 'crash.txt' }, purpose: 'context' });
    assert.equal(upload.status, 200);
    const fileId: string = upload.body.id;

    // Hold the file's row so the worker's commit transaction blocks: it is then provably mid-extraction.
    const blocker = await db.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM files WHERE id = $1 FOR UPDATE', [fileId]);
      const doomed = await startWorker();
      await eventually(
        async () => {
          const { rows } = await db.query(
            `SELECT count(*)::int AS waiting FROM pg_stat_activity
           WHERE wait_event_type = 'Lock' AND (query LIKE 'INSERT INTO file_pages%' OR query LIKE 'SELECT project_id, purpose FROM files%')`,
          );
          assert.equal(rows[0]?.waiting, 1, 'the worker is not yet committing');
        },
        { timeoutMs: 60_000, message: 'the extraction never reached its commit' },
      );
      doomed.child.kill('SIGKILL');
      assert.equal((await doomed.exited).signal, 'SIGKILL');
      await blocker.query('ROLLBACK');
    } finally {
      blocker.release();
    }

    const file = await tenant.admin.get(`/v1/files/${fileId}`);
    assert.equal(file.body.status, 'processing', 'nothing was committed by the killed worker');

    const replacement = await startWorker();
    const processed = await eventually(
      async () => {
        const current = await tenant.admin.get(`/v1/files/${fileId}`);
        assert.equal(current.body.status, 'processed', replacement.output());
        return current.body;
      },
      { timeoutMs: 90_000, message: 'the restarted worker did not finish the extraction' },
    );

    assert.deepEqual(processed.extracted, { pages: 2, tables: 0, graph_items: 0 });
    assert.deepEqual(await pagesOf(db, fileId), ['first', 'second']);
    assert.equal((await eventsFor(db, tenant.projectId, 'file.processed', fileId)).length, 1);

    const history = await api.services.temporal.workflow.getHandle(extractionWorkflowId(fileId)).fetchHistory();
    const attempts = (history.events ?? []).flatMap((e) =>
      e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : [],
    );
    assert.ok(
      attempts.some((attempt) => (attempt ?? 0) >= 2),
      `the activity was retried (attempts seen: ${attempts.join(', ')})`,
    );
  });

  it('(SIGKILL mid-PDF) resumes after the pages it had stored, on a restarted worker, and yields every page and item once', async function () {
    // Two long files extracted in full, their pages embedded.
    this.timeout(300_000);
    const { db } = database;
    const tenant = await newTenant(api, 'worker-crash-pdf');
    const pageCount = LONG_PDF_PAGES;
    const data = Buffer.from(await textPdf(pageCount, 8));
    const upload = await tenant.admin.upload({ file: { data, filename: 'long.pdf' }, purpose: 'context' });
    assert.equal(upload.status, 200);
    const fileId: string = upload.body.id;
    const stored = async () =>
      (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM file_pages WHERE file_id = $1', [fileId])).rows[0]!.n;

    const doomed = await startWorker();
    await eventually(async () => assert.ok((await stored()) >= PDF_BATCH_PAGES, 'no batch of pages stored yet'), {
      timeoutMs: 90_000,
      intervalMs: 20,
      message: 'the worker stored no pages',
    });
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const storedBeforeCrash = await stored();
    assert.ok(storedBeforeCrash < pageCount, 'killed mid-document');
    const firstWrite = (
      await db.query<{ xmin: string }>('SELECT xmin::text FROM file_pages WHERE file_id = $1 AND page_number = 1', [fileId])
    ).rows[0]!.xmin;

    const replacement = await startWorker();
    const processed = await eventually(
      async () => {
        const current = await tenant.admin.get(`/v1/files/${fileId}`);
        assert.equal(current.body.status, 'processed', replacement.output());
        return current.body;
      },
      { timeoutMs: 120_000, message: 'the restarted worker did not finish the PDF' },
    );

    assert.equal(processed.extracted.pages, pageCount);
    const pages = await pagesOf(db, fileId);
    assert.equal(pages.length, pageCount);
    assert.ok(
      pages.every((text, i) => text.startsWith(`Page ${i + 1} line 1:`)),
      'every page once, in its place',
    );
    const rewritten = (
      await db.query<{ xmin: string }>('SELECT xmin::text FROM file_pages WHERE file_id = $1 AND page_number = 1', [fileId])
    ).rows[0]!.xmin;
    assert.equal(rewritten, firstWrite, 'pages stored before the crash were not written again');
    const items = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM graph_items WHERE file_id = $1', [fileId]);
    assert.equal(processed.extracted.graph_items, items.rows[0]!.n);

    // The same bytes extracted without a crash give the same items.
    const reference = await tenant.admin.upload({ file: { data, filename: 'reference.pdf' }, purpose: 'context' });
    const clean = await eventually(
      async () => {
        const current = await tenant.admin.get(`/v1/files/${reference.body.id}`);
        assert.equal(current.body.status, 'processed');
        return current.body;
      },
      { timeoutMs: 120_000, message: 'the reference PDF was not processed' },
    );
    assert.deepEqual(clean.extracted, processed.extracted);
    assert.equal((await eventsFor(db, tenant.projectId, 'file.processed', fileId)).length, 1);
  });

  it('(SIGKILL while webhook receivers hang on its attempts) makes a retry again on a restarted worker within seconds, ends a delivery whose last attempt it was as failed, logs the attempts cut short, and neither logs nor counts an attempt it had not sent', async () => {
    // The workers of the tests before are gone, so that the attempts are made by this one; started first, it comes
    // up while the endpoints are registered.
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.exited));
    const doomed = await startWorker();
    const { db } = database;
    const tenant = await newTenant(api, 'worker-crash-webhook');
    const receiver = await startWebhookReceiver();
    try {
      // '/hangs': the first attempt (the dispatcher's) fails and the second never gets an answer. '/hangs-last':
      // the same for its third, the last of AGENTPLANE_WEBHOOK_MAX_ATTEMPTS.
      receiver.answer('/hangs', [500]);
      receiver.hang('/hangs', 2);
      receiver.answer('/hangs-last', [500, 500]);
      receiver.hang('/hangs-last', 3);
      // '/unsent': its first attempt fails, and the worker dies while its second waits on the database, unsent.
      // '/unsent-last': the same for its third, the last.
      receiver.answer('/unsent', [500]);
      const unsentFirst = receiver.hold('/unsent');
      receiver.answer('/unsent-last', [500]);
      const unsentLastSecond = receiver.hold('/unsent-last', { firstAnswered: 500 });
      const register = async (path: string, eventType = 'file.deleted') => {
        const created = await tenant.admin.post('/v1/webhooks', { url: receiver.url + path, event_types: [eventType] });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        return created.body as { id: string; secret: string };
      };
      const retried = await register('/hangs');
      const last = await register('/hangs-last');
      const unsent = await register('/unsent', 'file.processed');
      const unsentLast = await register('/unsent-last', 'file.processed');
      await recordEvent(db, tenant.projectId, 'file.deleted', { object: 'file', id: newId('file') });
      await recordEvent(db, tenant.projectId, 'file.processed', { object: 'file', id: newId('file') });
      await eventually(
        () => {
          assert.equal(receiver.to('/hangs').length, 2, doomed.output());
          assert.equal(receiver.to('/hangs-last').length, 3, doomed.output());
          assert.equal(unsentFirst.waiting(), 1, doomed.output());
          assert.equal(unsentLastSecond.waiting(), 1, doomed.output());
        },
        { timeoutMs: 30_000, message: 'the attempts did not reach the receivers' },
      );
      // An attempt reads its event before it sends it: '/unsent''s second and '/unsent-last''s third wait on this lock
      // once the attempt before has failed.
      const blocker = await db.connect();
      let replacement: CliProcess;
      try {
        await blocker.query('BEGIN');
        await blocker.query('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
        unsentFirst.release();
        unsentLastSecond.release();
        await eventually(
          async () => {
            const { rows } = await db.query(
              `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%AS delivery, to_jsonb(w) AS endpoint%' AND query NOT LIKE '%RETURNING%'`,
            );
            assert.equal(rows.length, 2, doomed.output());
          },
          { timeoutMs: 30_000, message: "'/unsent''s second and '/unsent-last''s third attempts did not wait on the database" },
        );
        // The replacement comes up while the attempts' heartbeats are missed; the attempts stay with the killed worker.
        replacement = await startWorker();
        doomed.child.kill('SIGKILL');
        assert.equal((await doomed.exited).signal, 'SIGKILL');
        await blocker.query('ROLLBACK');
      } finally {
        blocker.release();
      }

      // Well within an attempt's 5-minute timeout: its missed heartbeats give it up.
      const endOf = (endpointId: string, status: string) =>
        eventually(
          async () => {
            const listed = await tenant.admin.get(`/v1/webhooks/${endpointId}/deliveries`);
            const [found] = listed.body.data as components['schemas']['WebhookDelivery'][];
            assert.equal(found?.status, status, replacement.output());
            return found!;
          },
          { timeoutMs: 30_000, message: `the delivery did not end ${status} after the worker died` },
        );
      const [delivered, failed, unsentDelivered, unsentLastDelivered] = await Promise.all([
        endOf(retried.id, 'succeeded'),
        endOf(last.id, 'failed'),
        endOf(unsent.id, 'succeeded'),
        endOf(unsentLast.id, 'succeeded'),
      ]);
      assert.deepEqual(
        receiver.to('/hangs').map((r) => r.answered),
        [500, 0, 204],
      );
      // The same message each time, signed the Standard Webhooks way.
      for (const request of receiver.to('/hangs')) {
        const headers = {
          'webhook-id': String(request.headers['webhook-id']),
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        };
        assert.equal(headers['webhook-id'], delivered.event_id);
        assert.equal((new Webhook(retried.secret).verify(request.body, headers) as { id: string }).id, delivered.event_id);
      }
      assert.deepEqual(
        delivered.attempts.map((a) => [a.attempt, a.response_status, a.error]),
        [
          [1, 500, 'HTTP 500'],
          [2, null, ABANDONED_ATTEMPT_ERROR],
          [3, 204, null],
        ],
      );
      // The attempt the killed worker never sent is not one: the next is numbered where it would have been.
      assert.deepEqual(
        receiver.to('/unsent').map((r) => r.answered),
        [500, 204],
      );
      assert.deepEqual(
        unsentDelivered.attempts.map((a) => [a.attempt, a.response_status, a.error]),
        [
          [1, 500, 'HTTP 500'],
          [2, 204, null],
        ],
      );
      // Nor is it counted: the last attempt is still made.
      assert.deepEqual(
        receiver.to('/unsent-last').map((r) => r.answered),
        [500, 500, 204],
      );
      assert.deepEqual(
        unsentLastDelivered.attempts.map((a) => [a.attempt, a.response_status, a.error]),
        [
          [1, 500, 'HTTP 500'],
          [2, 500, 'HTTP 500'],
          [3, 204, null],
        ],
      );
      assert.equal(receiver.to('/hangs-last').length, 3, 'an attempt was made past the last');
      assert.deepEqual(
        failed.attempts.map((a) => [a.attempt, a.response_status, a.error]),
        [
          [1, 500, 'HTTP 500'],
          [2, 500, 'HTTP 500'],
          [3, null, ABANDONED_ATTEMPT_ERROR],
        ],
      );
    } finally {
      await receiver.close();
    }
  });
});
