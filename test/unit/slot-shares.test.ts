import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/activity';
import { ASKS_PER_SECOND, SLOTS_TAKEN, SlotShares } from '../../workflows/slot-shares.js';

/** A call that lasts until its `end` is called. */
function hanging(): { work: () => Promise<string>; end: () => void } {
  let end!: () => void;
  const ended = new Promise<string>((resolve) => (end = () => resolve('answered')));
  return { work: () => ended, end };
}

describe("a worker's activity slots among projects", () => {
  it("refuses a project's call past its share at once, retryably, while another project's call goes in", async () => {
    const shares = new SlotShares(2);
    const calls = [hanging(), hanging()];
    const running = calls.map((call) => shares.run('proj_a', call.work));
    await assert.rejects(
      shares.run('proj_a', async () => 'made'),
      (err: unknown) => {
        assert.ok(err instanceof ApplicationFailure);
        assert.equal(err.type, SLOTS_TAKEN);
        assert.equal(err.nonRetryable, false);
        assert.match(err.message, /2 calls of this project .* already under way/);
        return true;
      },
    );
    assert.equal(await shares.run('proj_b', async () => 'made'), 'made');
    assert.deepEqual(shares.usage(), new Map([['proj_a', 2]]));
    for (const call of calls) call.end();
    assert.deepEqual(await Promise.all(running), ['answered', 'answered']);
  });

  it('tells of a project refused at its first refusal and not again for a minute, each project on its own', async () => {
    const reports: string[] = [];
    const shares = new SlotShares(1, (projectId) => reports.push(projectId));
    const calls = [hanging(), hanging()];
    const running = [shares.run('proj_a', calls[0]!.work), shares.run('proj_b', calls[1]!.work)];
    for (const project of ['proj_a', 'proj_a', 'proj_b', 'proj_a'])
      await assert.rejects(
        shares.run(project, async () => 'made'),
        { type: SLOTS_TAKEN },
      );
    assert.deepEqual(reports, ['proj_a', 'proj_b']);
    for (const call of calls) call.end();
    await Promise.all(running);
  });

  it('gives a slot back when a call ends, however it ended', async () => {
    const shares = new SlotShares(1);
    await assert.rejects(
      shares.run('proj_a', async () => {
        throw new Error('the host reset the connection');
      }),
      /reset/,
    );
    const call = hanging();
    const running = shares.run('proj_a', call.work);
    await assert.rejects(
      shares.run('proj_a', async () => 'made'),
      { type: SLOTS_TAKEN },
    );
    call.end();
    await running;
    assert.equal(await shares.run('proj_a', async () => 'made'), 'made');
    assert.deepEqual(shares.usage(), new Map());
  });

  it('takes a slot to give back once, however often it is given back, and has none to take past the share', () => {
    const shares = new SlotShares(1);
    const giveBack = shares.take('proj_a');
    assert.ok(giveBack);
    assert.equal(shares.take('proj_a'), null);
    assert.ok(shares.take('proj_b'));
    giveBack();
    giveBack();
    assert.deepEqual(shares.usage(), new Map([['proj_b', 1]]));
    assert.ok(shares.take('proj_a'));
    assert.equal(shares.take('proj_a'), null);
  });

  it("asks a project's refused calls to wait longer once they are refused faster than it lets them ask, and only that project's", () => {
    let now = 0;
    const shares = new SlotShares(1, undefined, () => now);
    assert.ok(shares.take('proj_a'));
    assert.ok(shares.take('proj_b'));
    // A few calls waiting ask again at their usual pace.
    for (let i = 0; i < 6; i++) assert.equal(shares.take('proj_a'), null);
    assert.equal(shares.waitFactor('proj_a'), 1);
    // A hundred refused at once: each waits many times longer, so that together they ask far less often.
    for (let i = 0; i < 100; i++) assert.equal(shares.take('proj_a'), null);
    const factor = shares.waitFactor('proj_a');
    assert.ok(factor >= 40 / ASKS_PER_SECOND && factor <= 60, String(factor));
    assert.equal(shares.take('proj_b'), null);
    assert.equal(shares.waitFactor('proj_b'), 1);
    assert.equal(shares.waitFactor('proj_c'), 1);
    // Once they stop being refused, the project's rate fades: a call refused ten seconds later waits less long.
    now = 10_000;
    assert.equal(shares.take('proj_a'), null);
    assert.ok(shares.waitFactor('proj_a') < factor / 5, String(shares.waitFactor('proj_a')));
    now = 60_000;
    assert.equal(shares.waitFactor('proj_a'), 1);
  });
});
