/**
 * A worker that loses PostgreSQL keeps its webhook deliveries: events recorded meanwhile are dispatched once
 * it is back, and a delivery in progress logs its attempt when it can, and sends it once. The worker here has
 * a database of its own, reached through a TCP proxy the test cuts, and a Temporal namespace of its own.
 */
import assert from 'node:assert/strict';
import { createServer, Socket, type Server } from 'node:net';
import { Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import { pino } from 'pino';
import type { Stoppable } from '../../cli/processes.js';
import { serveWorker } from '../../cli/worker-process.js';
import type { Services } from '../../cli/runtime.js';
import { createDb, type Db } from '../../records/db.js';
import { migrate } from '../../records/migrate.js';
import { insertProject } from '../../records/projects.js';
import { recordEvent } from '../../records/events.js';
import { insertEndpoint } from '../../records/webhooks.js';
import { newId } from '../../records/ids.js';
import { FilesystemBlobStore } from '../../records/blobs/filesystem.js';
import { ModelCatalogue } from '../../models/catalogue.js';
import { ModelGateway } from '../../models/gateway.js';
import { eventually } from '../support/eventually.js';
import { TEST_WEBHOOK_SETTINGS, workflowBundle, quietTemporalRuntime } from '../support/api.js';
import { isolatedNamespace, postgres, scratch, temporal, testLog } from '../support/services.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/** A TCP proxy to PostgreSQL that can be cut (every connection dropped, new ones refused) and restored. */
class CuttableProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = new Socket();
      this.sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      upstream.connect(this.target.port, this.target.host, () => client.pipe(upstream).pipe(client));
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await new Promise((resolve) => server?.close(resolve));
  }
}

describe('webhook deliveries through a PostgreSQL outage', function () {
  this.timeout(180_000);
  let direct: Db;
  let worker: Stoppable;
  let proxy: CuttableProxy;
  let receiver: WebhookReceiver;
  let projectId: string;
  let connection: Connection;
  let services: Services;
  let namespace: string;
  let temporalAddress: string;
  const logged: string[] = [];

  before(async () => {
    quietTemporalRuntime();
    const [pg, tp] = await Promise.all([postgres(), temporal()]);
    await pg.db.query('CREATE DATABASE agentplane_webhooks_outage');
    const url = new URL(pg.url.replace(/\/agentplane$/, '/agentplane_webhooks_outage'));
    direct = createDb(url.toString(), { log: testLog });
    await migrate(direct);
    proxy = new CuttableProxy({ host: url.hostname, port: Number(url.port) });
    await proxy.open();
    const viaProxy = new URL(url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);

    // The worker's log, read for the dispatcher's report of the outage.
    const log = pino({ level: 'warn' }, new Writable({ write: (chunk, _encoding, done) => (logged.push(String(chunk)), done()) }));
    namespace = await isolatedNamespace('webhooks-outage');
    connection = await Connection.connect({ address: tp.address });
    const models = await ModelCatalogue.load({}, log);
    services = {
      db: createDb(viaProxy.toString(), { log }),
      blobs: await new FilesystemBlobStore(`${await scratch}/webhooks-outage-blobs`).init(),
      temporal: new Client({ connection, namespace }),
      log,
      models,
      gateway: new ModelGateway(models, {}),
      toolsAllowPrivate: true,
      webhooks: TEST_WEBHOOK_SETTINGS,
      close: async () => {},
    };
    temporalAddress = tp.address;
    worker = await serveWorker(services, temporalAddress, namespace, await workflowBundle());
    receiver = await startWebhookReceiver();
    projectId = (await insertProject(direct, 'webhooks-outage')).id;
  });

  after(async () => {
    await worker?.stop();
    await connection?.close();
    await receiver?.close();
    await direct?.end();
  });

  async function recordFileDeleted(): Promise<string> {
    const fileId = newId('file');
    await recordEvent(direct, projectId, 'file.deleted', { object: 'file', id: fileId });
    return fileId;
  }

  const outageReported = (since: number) =>
    eventually(() => assert.ok(logged.slice(since).some((line) => line.includes('webhook deliveries cannot be dispatched now'))), {
      timeoutMs: 30_000,
      message: 'the dispatcher did not report the outage',
    });

  it('dispatches an event recorded while the worker could not reach PostgreSQL once it can, and sends it once', async () => {
    const { record, secret } = await insertEndpoint(direct, {
      projectId,
      url: `${receiver.url}/after-outage`,
      eventTypes: ['file.deleted'],
    });
    assert.ok(secret);
    const since = logged.length;
    await proxy.cut();
    const fileId = await recordFileDeleted();
    await outageReported(since);
    assert.equal(receiver.to('/after-outage').length, 0);
    await proxy.open();
    await eventually(() => assert.equal(receiver.to('/after-outage').length, 1), {
      timeoutMs: 30_000,
      message: 'the event was not delivered after the outage',
    });
    assert.equal(JSON.parse(receiver.to('/after-outage')[0]!.body).data.id, fileId);
    // The attempt is logged after the receiver has answered it.
    await eventually(
      async () => {
        const { rows } = await direct.query<{ status: string; attempts: number }>(
          'SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = $1',
          [record.id],
        );
        assert.deepEqual(rows, [{ status: 'succeeded', attempts: 1 }]);
      },
      { timeoutMs: 30_000, message: 'the delivery was not logged as succeeded' },
    );
    assert.equal(receiver.to('/after-outage').length, 1, 'the event was sent again');
  });

  it('logs an attempt answered while PostgreSQL was away once it is back, without sending it again', async () => {
    const held = receiver.hold('/mid-outage');
    const { record } = await insertEndpoint(direct, { projectId, url: `${receiver.url}/mid-outage`, eventTypes: ['file.deleted'] });
    await recordFileDeleted();
    await eventually(() => assert.equal(held.waiting(), 1), { timeoutMs: 30_000, message: 'the first attempt was not made' });
    const since = logged.length;
    await proxy.cut();
    // Answered now, with nowhere to log it until PostgreSQL is back.
    held.release();
    await outageReported(since);
    await proxy.open();
    await eventually(
      async () => {
        const { rows } = await direct.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE endpoint_id = $1', [
          record.id,
        ]);
        assert.deepEqual(rows, [{ status: 'succeeded' }]);
      },
      { timeoutMs: 30_000, message: 'the delivery did not succeed after the outage' },
    );
    const { rows: attempts } = await direct.query<{ attempt: number; response_status: number }>(
      'SELECT a.attempt, a.response_status FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 ORDER BY a.attempt',
      [record.id],
    );
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.response_status]),
      [[1, 204]],
    );
    assert.equal(receiver.to('/mid-outage').length, 1, 'the event was sent again');
  });

  it('gives back the first attempt it was making when it stops, and the worker after it makes it at once', async () => {
    const held = receiver.hold('/stopping');
    const { record } = await insertEndpoint(direct, { projectId, url: `${receiver.url}/stopping`, eventTypes: ['file.deleted'] });
    await recordFileDeleted();
    await eventually(() => assert.equal(held.waiting(), 1), { timeoutMs: 30_000, message: 'the first attempt was not made' });

    await worker.stop();
    const { rows } = await direct.query<{ status: string; attempts: number; claimed: boolean }>(
      'SELECT status, attempts, claimed_until IS NOT NULL AS claimed FROM webhook_deliveries WHERE endpoint_id = $1',
      [record.id],
    );
    assert.deepEqual(rows, [{ status: 'pending', attempts: 0, claimed: false }], 'the stopped worker kept its claim');

    worker = await serveWorker(services, temporalAddress, namespace, await workflowBundle());
    await eventually(() => assert.equal(held.waiting(), 2), { timeoutMs: 30_000, message: 'the next worker did not make the attempt' });
    held.release();
    await eventually(
      async () => {
        const { rows: now } = await direct.query<{ status: string; attempts: number }>(
          'SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = $1',
          [record.id],
        );
        assert.deepEqual(now, [{ status: 'succeeded', attempts: 1 }]);
      },
      { timeoutMs: 30_000, message: 'the delivery did not succeed' },
    );
  });
});
