import assert from 'node:assert/strict';
import { FairAdmission, leastHoldingNobody as apiLeast } from '../../api/fair-admission.js';
import { leastHoldingNobody as workerLeast } from '../../workflows/project-shares.js';
import { ApiError } from '../../api/errors.js';
import { eventually } from '../support/eventually.js';

// Turns by time held are measured on their own below.
const BY_PLACES_ONLY = { busyUtilization: 1, shareWaitMs: 0 };

/** Settles on the next turns of the event loop: whether `promise` has settled by then. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('fair admission', () => {
  it('lets a project alone have every place, and its next request in when one is given back', async () => {
    const admission = new FairAdmission({ atOnce: 3, queuedPerProject: 10, queueWaitSeconds: 30, ...BY_PLACES_ONLY });
    for (let i = 0; i < 3; i++) await admission.enter('proj_a');
    const fourth = admission.enter('proj_a');
    assert.equal(await settled(fourth), false);
    assert.deepEqual(admission.load, { working: 3, queued: 1 });
    admission.exit('proj_a');
    await fourth;
    assert.deepEqual(admission.load, { working: 3, queued: 0 });
  });

  it("lets another project's request in before a busy project's waiting ones", async () => {
    const admission = new FairAdmission({ atOnce: 2, queuedPerProject: 50, queueWaitSeconds: 30, ...BY_PLACES_ONLY });
    await admission.enter('proj_busy');
    await admission.enter('proj_busy');
    const order: string[] = [];
    const busy = Array.from({ length: 20 }, (_, i) => admission.enter('proj_busy').then(() => order.push(`busy ${i}`)));
    const other = admission.enter('proj_other').then(() => order.push('other'));
    await settled(other);
    assert.deepEqual(order, []);
    // The busy project gives back one of its two places: with two projects asking, its share is one.
    admission.exit('proj_busy');
    await settled(other);
    assert.deepEqual(order, ['other']);
    assert.deepEqual(admission.load, { working: 2, queued: 20 });
    for (let i = 0; i < 20; i++) {
      admission.exit('proj_busy');
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(order.length, 21);
    await Promise.all([...busy, other]);
  });

  it('answers 429 with Retry-After when a project has as many requests waiting as it may', async () => {
    const admission = new FairAdmission({ atOnce: 1, queuedPerProject: 2, queueWaitSeconds: 30, ...BY_PLACES_ONLY });
    await admission.enter('proj_a');
    const waiting = [admission.enter('proj_a'), admission.enter('proj_a')];
    await assert.rejects(admission.enter('proj_a'), (err: ApiError) => {
      assert.equal(err.status, 429);
      assert.equal(err.code, 'too_many_requests_queued');
      assert.equal(err.headers['Retry-After'], '1');
      return true;
    });
    // Another project queues on its own.
    const other = admission.enter('proj_b');
    for (let i = 0; i < 3; i++) admission.exit(i === 0 ? 'proj_a' : i === 1 ? 'proj_b' : 'proj_a');
    await Promise.all([...waiting, other]);
  });

  it('answers 429 to a request that waited longer than the bound, and forgets it', async () => {
    const admission = new FairAdmission({ atOnce: 1, queuedPerProject: 5, queueWaitSeconds: 1, ...BY_PLACES_ONLY });
    await admission.enter('proj_a');
    await assert.rejects(admission.enter('proj_a'), (err: ApiError) => err.status === 429 && err.code === 'request_queue_timeout');
    assert.deepEqual(admission.load, { working: 1, queued: 0 });
  });

  it('forgets a waiting request whose client went away', async () => {
    const admission = new FairAdmission({ atOnce: 1, queuedPerProject: 5, queueWaitSeconds: 30, ...BY_PLACES_ONLY });
    await admission.enter('proj_a');
    const gone = new AbortController();
    const waiting = admission.enter('proj_a', { signal: gone.signal });
    gone.abort();
    await assert.rejects(waiting);
    assert.deepEqual(admission.load, { working: 1, queued: 0 });
  });

  it('gives a place back while its request waits, and takes one again after', async () => {
    const admission = new FairAdmission({ atOnce: 1, queuedPerProject: 5, queueWaitSeconds: 30, ...BY_PLACES_ONLY });
    await admission.enter('proj_a');
    const place = admission.placeFor('proj_a');
    let release!: () => void;
    const idle = place.idleWhile(() => new Promise<void>((resolve) => (release = resolve)));
    // While it waits, another request has the place.
    await admission.enter('proj_b');
    release();
    assert.equal(await settled(idle), false);
    admission.exit('proj_b');
    await idle;
    assert.deepEqual(admission.load, { working: 1, queued: 0 });
    place.leave();
    place.leave();
    assert.deepEqual(admission.load, { working: 0, queued: 0 });
  });
});

/** A busy loop's ticks: `active` milliseconds of every 100. */
const busyTicks = (admission: FairAdmission, ticks: number, active = 90) => {
  for (let i = 0; i < ticks; i++) admission.account({ active, utilization: active / 100 });
};

/**
 * With `proj_steady` down to one place and `other` holding two, `other` takes a third (short of its share of four)
 * and holds them through a busy loop: its next request waits for its turn, the steady project's is let in at once.
 */
async function heldOnceItHoldsMore(admission: FairAdmission, other: string) {
  assert.equal(await settled(admission.enter(other)), true);
  busyTicks(admission, 40);
  assert.equal(await settled(admission.enter(other)), false, `${other}'s next request waits for its turn`);
  assert.equal(await settled(admission.enter('proj_steady')), true, "the steady project's next request is let in at once");
}

describe('fair admission by time held, on a busy process', () => {
  const limits = { atOnce: 8, queuedPerProject: 50, queueWaitSeconds: 30, busyUtilization: 0.2, shareWaitMs: 60_000 };

  it("holds the next request of a project that held most places through a busy loop, and lets the other project's in at once", async () => {
    const admission = new FairAdmission(limits);
    // The hog holds three places (its share is four), the steady project one.
    for (let i = 0; i < 3; i++) await admission.enter('proj_hog');
    await admission.enter('proj_steady');
    busyTicks(admission, 20);

    let hogIn = false;
    const hog = admission.enter('proj_hog').then(() => (hogIn = true));
    assert.equal(await settled(admission.enter('proj_steady')), true, "the steady project's request is let in at once");
    assert.equal(await settled(hog), false, "the hog's next request waits for its turn, though places are free");
    assert.deepEqual(admission.load, { working: 5, queued: 1 });

    // The hog gives its places back and the loop goes quiet: its use decays, and its turn comes.
    for (let i = 0; i < 3; i++) admission.exit('proj_hog');
    for (let i = 0; i < 100 && !hogIn; i++) {
      busyTicks(admission, 1, 0);
      await settled(hog);
    }
    assert.equal(hogIn, true);
  });

  it('remembers the use of a project held for its turn until it has decayed, so its rival is not held when it comes back', async () => {
    let now = 0;
    const admission = new FairAdmission({ ...limits, shareWaitMs: 1_000 }, () => now);
    for (let i = 0; i < 3; i++) await admission.enter('proj_hog');
    await admission.enter('proj_steady');
    busyTicks(admission, 20);
    // The hog's next request is held for its turn, and let in once it has waited the longest a turn may take.
    const held = admission.enter('proj_hog');
    assert.equal(await settled(held), false);
    now += 1_000;
    busyTicks(admission, 1);
    assert.equal(await settled(held), true);
    // The steady project makes and ends another request, keeping its first place. The hog's requests end, the last
    // over a second after the hog last asked: it is quiet, with most of the loop's use behind it.
    assert.equal(await settled(admission.enter('proj_steady')), true);
    admission.exit('proj_steady');
    for (let i = 0; i < 4; i++) admission.exit('proj_hog');

    // The hog comes back at once: its past still counts, and its request waits for its turn again.
    const back = admission.enter('proj_hog');
    assert.equal(await settled(back), false, "the hog's request coming back waits for its turn");
    now += 1_000;
    busyTicks(admission, 1);
    assert.equal(await settled(back), true);
    // It holds a place while the loop stays busy, as the steady project does.
    busyTicks(admission, 5);
    admission.exit('proj_steady');
    assert.equal(await settled(admission.enter('proj_steady')), true, "the steady project's next request is let in at once");
    assert.equal(await settled(admission.enter('proj_hog')), false, "the hog's next request still waits for its turn");
  });

  it('does not hold a project for the time it had the process alone before a new project came, and holds the newcomer once it holds more', async () => {
    const admission = new FairAdmission(limits);
    for (let i = 0; i < 2; i++) await admission.enter('proj_steady');
    busyTicks(admission, 20);
    // A new project takes two places beside it, and the loop stays busy.
    for (let i = 0; i < 2; i++) assert.equal(await settled(admission.enter('proj_new')), true);
    busyTicks(admission, 2);
    assert.equal(await settled(admission.enter('proj_steady')), true, "the steady project's next request is let in at once");

    for (let i = 0; i < 2; i++) admission.exit('proj_steady');
    await heldOnceItHoldsMore(admission, 'proj_new');
  });

  it('does not hold a project as another comes back from quiet with little use counted, and holds that one once it holds more', async () => {
    let now = 0;
    const admission = new FairAdmission(limits, () => now);
    for (let i = 0; i < 3; i++) await admission.enter('proj_steady');
    await admission.enter('proj_rival');
    busyTicks(admission, 10);
    // The rival's request ends and it goes quiet for a few seconds, its use decaying, while the steady project works on.
    admission.exit('proj_rival');
    now += 3_000;
    busyTicks(admission, 30);
    assert.equal(admission.remembered, 2, "the rival's use is still remembered");
    // The rival comes back with two requests.
    for (let i = 0; i < 2; i++) assert.equal(await settled(admission.enter('proj_rival')), true);
    busyTicks(admission, 2);
    assert.equal(await settled(admission.enter('proj_steady')), true, "the steady project's next request is let in at once");

    for (let i = 0; i < 3; i++) admission.exit('proj_steady');
    await heldOnceItHoldsMore(admission, 'proj_rival');
  });

  it('forgets a quiet project once its use has decayed', async () => {
    let now = 0;
    const admission = new FairAdmission(limits, () => now);
    await admission.enter('proj_gone');
    await admission.enter('proj_other');
    busyTicks(admission, 20);
    admission.exit('proj_gone');
    admission.exit('proj_other');
    now += 1_000;
    busyTicks(admission, 1, 0);
    assert.equal(admission.remembered, 2, 'both are remembered while their use weighs');
    for (let i = 0; i < 400 && admission.remembered > 0; i++) busyTicks(admission, 1, 0);
    assert.equal(admission.remembered, 0);
  });

  it('never holds a project alone, however busy the loop', async () => {
    const admission = new FairAdmission(limits);
    for (let i = 0; i < 4; i++) await admission.enter('proj_alone');
    busyTicks(admission, 20, 100);
    assert.equal(await settled(admission.enter('proj_alone')), true);
  });

  it('holds no project while the loop is not busy', async () => {
    const admission = new FairAdmission(limits);
    for (let i = 0; i < 3; i++) await admission.enter('proj_hog');
    await admission.enter('proj_steady');
    busyTicks(admission, 40, 10);
    assert.equal(await settled(admission.enter('proj_hog')), true);
  });

  it('lets a held request in once it has waited the longest a turn by time may take', async () => {
    const admission = new FairAdmission({ ...limits, shareWaitMs: 50 });
    for (let i = 0; i < 3; i++) await admission.enter('proj_hog');
    await admission.enter('proj_steady');
    busyTicks(admission, 20);
    const startedAt = Date.now();
    const hog = admission.enter('proj_hog');
    assert.equal(await settled(hog), false);
    // Each tick looks again; the loop stays busy, so only the bound lets it in.
    await eventually(async () => {
      busyTicks(admission, 1);
      assert.equal(await settled(hog), true);
    });
    assert.ok(Date.now() - startedAt >= 50);
  });
});

describe('where a project coming to ask is placed, on the API and on the worker alike', () => {
  const OVER_SHARE = 1.25;
  /** Those of `uses` over a quarter above an even split, when more than one asks. */
  const held = (uses: number[]) => {
    const bar = uses.length < 2 ? Infinity : (OVER_SHARE * uses.reduce((sum, ms) => sum + ms, 0)) / uses.length;
    return uses.map((ms) => ms > bar);
  };

  for (const [layer, least] of [
    ['API', apiLeast],
    ['worker', workerLeast],
  ] as const) {
    it(`on the ${layer}: holds up none of those within their share, and any lower would`, () => {
      assert.equal(least([]), 0);
      assert.ok(Math.abs(least([1_000]) - 600) < 0.001);
      let seed = 7;
      const random = () => ((seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647) * 3_000;
      for (let i = 0; i < 500; i++) {
        const others = Array.from({ length: 1 + (i % 5) }, random);
        const placed = least(others);
        const before = held(others);
        const after = held([...others, placed]);
        assert.ok(
          others.every((_, j) => before[j] || !after[j]),
          `placed at ${placed} beside ${others.join(', ')}, it holds up one that was within its share`,
        );
        if (placed > 0) {
          const lower = held([...others, placed * 0.99]);
          assert.ok(
            others.some((_, j) => !before[j] && lower[j]),
            `placed at ${placed} beside ${others.join(', ')}, lower would do`,
          );
        }
      }
    });
  }
});
