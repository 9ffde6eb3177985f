import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/activity';
import { ASKS_PER_SECOND, SLOTS_TAKEN, SlotShares } from '../../workflows/slot-shares.js';
import { waitAfterRefusal } from '../../workflows/refusal-backoff.js';

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

  it("asks a project's refused calls to wait longer once more of them wait than it lets ask a second, and only that project's", () => {
    let now = 0;
    const shares = new SlotShares(1, undefined, () => now);
    assert.ok(shares.take('proj_a'));
    assert.ok(shares.take('proj_b'));
    // A few calls waiting ask again at their usual pace, however often each asks.
    for (let i = 0; i < 6 * ASKS_PER_SECOND; i++) assert.equal(shares.take('proj_a', { id: `call ${i % (2 * ASKS_PER_SECOND)}` }), null);
    assert.equal(shares.waitFactor('proj_a'), 1);
    // A hundred waiting: each waits as many times longer as together they would ask at its usual pace.
    for (let i = 0; i < 100; i++) assert.equal(shares.take('proj_a', { id: `call ${i}` }), null);
    assert.equal(shares.waitFactor('proj_a'), 100 / ASKS_PER_SECOND);
    assert.equal(shares.take('proj_b', { id: 'call 0' }), null);
    assert.equal(shares.waitFactor('proj_b'), 1);
    assert.equal(shares.waitFactor('proj_c'), 1);
    // Still waiting ten seconds later (they ask again within a minute): the same.
    now = 10_000;
    assert.equal(shares.waitFactor('proj_a'), 100 / ASKS_PER_SECOND);
    // Those not seen for longer than the longest wait are forgotten: they got in, or their runs ended.
    now = 40_000;
    assert.equal(shares.take('proj_a', { id: 'call 7' }), null);
    now = 70_000;
    assert.equal(shares.waitFactor('proj_a'), 1);
  });

  it('counts a call that got in as no longer waiting', () => {
    const shares = new SlotShares(1);
    const first = shares.take('proj_a', { id: 'call 0' })!;
    for (let i = 1; i <= 40; i++) assert.equal(shares.take('proj_a', { id: `call ${i}` }), null);
    assert.equal(shares.waitFactor('proj_a'), 40 / ASKS_PER_SECOND);
    first();
    assert.ok(shares.take('proj_a', { id: 'call 1' }));
    assert.equal(shares.waitFactor('proj_a'), Math.round((39 / ASKS_PER_SECOND) * 10) / 10);
  });

  it("forgets a run's waiting calls once the run ends, and only that run's", () => {
    const shares = new SlotShares(1);
    assert.ok(shares.take('proj_a', { id: 'held', runId: 'run_held' }));
    for (let i = 0; i < 40; i++) assert.equal(shares.take('proj_a', { id: `run_a ${i}`, runId: 'run_a' }), null);
    for (let i = 0; i < 12; i++) assert.equal(shares.take('proj_a', { id: `run_b ${i}`, runId: 'run_b' }), null);
    assert.equal(shares.waitFactor('proj_a'), 52 / ASKS_PER_SECOND);
    shares.forgetRun('run_a');
    assert.equal(shares.waitFactor('proj_a'), 12 / ASKS_PER_SECOND);
    shares.forgetRun('run_b');
    assert.equal(shares.waitFactor('proj_a'), 1);
  });

  it('has 125 calls refused at once ask again about as often as it lets a project ask, not as often as each would alone', () => {
    let now = 0;
    const shares = new SlotShares(25, undefined, () => now);
    for (let i = 0; i < 25; i++) assert.ok(shares.take('proj_a', { id: `held ${i}` }));
    // Each refused call sleeps its wait (spread as its workflow spreads it) and asks again; none gets in.
    let seed = 7;
    const jitter = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    const asks: { at: number; call: number; refusals: number }[] = Array.from({ length: 125 }, (_, call) => ({
      at: call * 10,
      call,
      refusals: 0,
    }));
    let askedAgain = 0;
    for (;;) {
      asks.sort((a, b) => a.at - b.at);
      const ask = asks.shift()!;
      if (ask.at >= 60_000) break;
      now = ask.at;
      if (ask.refusals > 0) askedAgain++;
      assert.equal(shares.take('proj_a', { id: `call ${ask.call}` }), null);
      asks.push({ ...ask, at: now + waitAfterRefusal(ask.refusals, jitter(), shares.waitFactor('proj_a')), refusals: ask.refusals + 1 });
    }
    // Each at its usual pace, they would ask again 749 times in the first minute.
    assert.ok(askedAgain <= 60 * ASKS_PER_SECOND, `${askedAgain} asks again in the first minute`);
  });
});
