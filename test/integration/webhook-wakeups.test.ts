import assert from 'node:assert/strict';
import pg from 'pg';
import { transaction, type Db } from '../../records/db.js';
import { recordEvent, type EventType } from '../../records/events.js';
import { insertProject } from '../../records/projects.js';
import { insertEndpoint, updateEndpoint } from '../../records/webhooks.js';
import { WEBHOOKS_CHANNEL } from '../../records/webhook-deliveries.js';
import { isolatedDatabase } from '../support/services.js';
import { eventually } from '../support/eventually.js';

/**
 * What wakes the webhook dispatchers: an event that an enabled endpoint of its project subscribes to. The
 * others (most runs' endings, in projects with no endpoints) wait for a dispatcher's poll, which marks many at
 * once, rather than costing each a pass of every dispatcher.
 */
describe('webhook dispatchers are woken', () => {
  let db: Db;
  let listener: pg.Client;
  const heard: string[] = [];

  before(async function () {
    this.timeout(120_000);
    // Out of reach of the other suites' workers, which record events of their own.
    const isolated = await isolatedDatabase('agentplane_webhook_wakeups');
    db = isolated.db;
    listener = new pg.Client({ connectionString: isolated.url });
    await listener.connect();
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    await listener.query(`LISTEN ${WEBHOOKS_CHANNEL}`);
  });

  after(async () => {
    await listener?.end();
  });

  /**
   * Whether recording the events woke the dispatchers. A notification sent after their transaction commits
   * arrives after any they sent: once it is heard, whatever they sent has been.
   */
  async function wakes(projectId: string, types: EventType[]): Promise<boolean> {
    heard.length = 0;
    await transaction(db, async (tx) => {
      for (const type of types) await recordEvent(tx, projectId, type, { object: 'run', id: 'run_x' });
    });
    await db.query('SELECT pg_notify($1, $2)', [WEBHOOKS_CHANNEL, 'after']);
    await eventually(() => assert.ok(heard.includes('after')), { timeoutMs: 10_000, message: 'the notification after was not heard' });
    return heard.some((payload) => payload !== 'after');
  }

  it('by an event an enabled endpoint of its project subscribes to, and not by the events no endpoint takes', async () => {
    const quiet = await insertProject(db, 'quiet');
    const subscribed = await insertProject(db, 'subscribed');
    const { record: endpoint } = await insertEndpoint(db, {
      projectId: subscribed.id,
      url: 'https://hooks.example.com/runs',
      eventTypes: ['run.failed'],
    });
    await insertEndpoint(db, { projectId: quiet.id, url: 'https://hooks.example.com/other', eventTypes: ['file.deleted'] });

    assert.equal(await wakes(quiet.id, ['run.completed', 'run.failed']), false, 'no endpoint of the project takes these events');
    assert.equal(await wakes(subscribed.id, ['run.completed']), false, 'its endpoint does not subscribe to run.completed');
    assert.equal(await wakes(subscribed.id, ['run.completed', 'run.failed']), true, 'its endpoint subscribes to run.failed');

    await updateEndpoint(db, subscribed.id, endpoint.id, { status: 'disabled' });
    assert.equal(await wakes(subscribed.id, ['run.failed']), false, 'a disabled endpoint takes nothing');

    await insertEndpoint(db, { projectId: quiet.id, url: 'https://hooks.example.com/all', eventTypes: ['*'] });
    assert.equal(await wakes(quiet.id, ['run.completed']), true, 'an endpoint of `*` takes every event');
  });
});
