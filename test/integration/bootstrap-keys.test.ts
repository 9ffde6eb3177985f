import assert from 'node:assert/strict';
import { pino } from 'pino';
import { prepareDatabase } from '../../cli/runtime.js';
import {
  BOOTSTRAP_KEY_GRACE_MINUTES,
  ensureBootstrapKey,
  findApiKeyBySecret,
  hashSecret,
  holdBootstrapKey,
  newSecret,
  retireOtherBootstrapKeys,
} from '../../records/api-keys.js';
import { createDb, type Db } from '../../records/db.js';
import { postgres, testLog } from '../support/services.js';

const log = pino({ level: 'silent' });

/** Makes a key look as if the last process holding it stopped `minutes` ago. */
async function lastHeld(db: Db, secret: string, minutes: number): Promise<void> {
  await db.query(`UPDATE api_keys SET bootstrap_held_at = now() - make_interval(mins => $2) WHERE secret_hash = $1`, [
    hashSecret(secret),
    minutes,
  ]);
}

async function isLive(db: Db, secret: string): Promise<boolean> {
  return (await findApiKeyBySecret(db, secret)) !== null;
}

describe('bootstrap keys across processes and rotations', () => {
  // A database of its own: the suites' shared one holds exactly one bootstrap key.
  const name = `bootstrap_keys_${process.pid}_${Date.now()}`;
  let db: Db;
  let previous: string;
  let next: string;

  before(async function () {
    this.timeout(120_000);
    const pg = await postgres();
    await pg.db.query(`CREATE DATABASE ${name}`);
    const url = new URL(pg.url);
    url.pathname = `/${name}`;
    db = createDb(url.toString(), { max: 2, log: testLog });
  });

  after(async () => {
    await db.end();
    await (await postgres()).db.query(`DROP DATABASE ${name}`);
  });

  beforeEach(async () => {
    previous = newSecret();
    next = newSecret();
    await prepareDatabase(db, previous, log);
  });

  afterEach(async () => {
    await db.query('UPDATE api_keys SET revoked_at = now() WHERE bootstrap AND revoked_at IS NULL');
  });

  it('keeps both keys working when processes start with different keys, as in a rolling update', async () => {
    await prepareDatabase(db, next, log);
    assert.ok(await isLive(db, previous), 'a new replica must not lock out the replicas still running with the previous key');
    assert.ok(await isLive(db, next));
    await prepareDatabase(db, previous, log); // an old replica restarts mid-rollout
    assert.ok(await isLive(db, previous));
    assert.ok(await isLive(db, next), 'an old replica must not lock out the new ones either');
  });

  it('puts every bootstrap key in the one bootstrap project, with the admin scope', async () => {
    await prepareDatabase(db, next, log);
    const [first, second] = [await findApiKeyBySecret(db, previous), await findApiKeyBySecret(db, next)];
    assert.equal(second!.project_id, first!.project_id);
    assert.deepEqual(second!.scopes, ['admin']);
    assert.equal(second!.bootstrap, true);
  });

  it(`retires a key no process has held for ${BOOTSTRAP_KEY_GRACE_MINUTES} minutes, and keeps the one still held`, async () => {
    await prepareDatabase(db, next, log);
    await lastHeld(db, previous, BOOTSTRAP_KEY_GRACE_MINUTES + 1);
    await holdBootstrapKey(db, next);
    assert.equal(await isLive(db, previous), false);
    assert.ok(await isLive(db, next));
  });

  it('retires an unheld key at the next start-up as well', async () => {
    await lastHeld(db, previous, BOOTSTRAP_KEY_GRACE_MINUTES + 1);
    await prepareDatabase(db, next, log);
    assert.equal(await isLive(db, previous), false);
    assert.ok(await isLive(db, next));
  });

  it('keeps a key last held within the grace period', async () => {
    await prepareDatabase(db, next, log);
    await lastHeld(db, previous, BOOTSTRAP_KEY_GRACE_MINUTES - 1);
    await holdBootstrapKey(db, next);
    assert.ok(await isLive(db, previous));
  });

  it('keeps a key live while a process reports it held, however long ago it was configured', async () => {
    await prepareDatabase(db, next, log);
    await lastHeld(db, previous, BOOTSTRAP_KEY_GRACE_MINUTES + 1);
    await holdBootstrapKey(db, previous); // the process holding it reports in before anyone retires it
    await holdBootstrapKey(db, next);
    assert.ok(await isLive(db, previous));
  });

  it('revokes every other bootstrap key at once when asked, and a report does not bring one back; a start-up with it does', async () => {
    await prepareDatabase(db, next, log);
    assert.equal(await retireOtherBootstrapKeys(db, next), 1);
    assert.equal(await isLive(db, previous), false);
    assert.ok(await isLive(db, next));
    await holdBootstrapKey(db, previous);
    assert.equal(await isLive(db, previous), false, 'a running replica cannot undo a retirement');
    await ensureBootstrapKey(db, previous);
    assert.ok(await isLive(db, previous), 'configuring the key again is what makes it live');
  });

  it('revokes nothing when asked to keep a key that is not a live bootstrap key', async () => {
    assert.equal(await retireOtherBootstrapKeys(db, newSecret()), null);
    assert.ok(await isLive(db, previous));
  });
});
