import assert from 'node:assert/strict';
import { ProjectShares } from '../../workflows/project-shares.js';

/** Work that lasts until the test ends it. */
function held() {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  return { work: () => ended, end };
}

/** A busy loop's ticks: `active` milliseconds of every 100. */
const busyTicks = (shares: ProjectShares, ticks: number, active = 90) => {
  for (let i = 0; i < ticks; i++) shares.account({ active, utilization: active / 100 });
};

/** Starts and ends one short activity of each project of `asking`, as a run's steps do. */
async function asked(shares: ProjectShares, asking: string[]) {
  for (const projectId of asking) await shares.run(projectId, async () => undefined);
}

/** Twenty busy ticks, in each of which `activity` starts and ends five times, and each project of `asking` asks once. */
async function busyTicksOf(shares: ProjectShares, activity: () => Promise<unknown>, asking: string[] = []) {
  for (let tick = 0; tick < 20; tick++) {
    for (let i = 0; i < 5; i++) await activity();
    await asked(shares, asking);
    busyTicks(shares, 1);
  }
}

/** Ticks `active` milliseconds busy, in each of which each project of `asking` asks once. */
async function busyTicksAsking(shares: ProjectShares, ticks: number, asking: string[], active = 90) {
  for (let tick = 0; tick < ticks; tick++) {
    await asked(shares, asking);
    busyTicks(shares, 1, active);
  }
}

/**
 * Busy ticks in each of which `heavy` starts and ends ten short activities and `proj_steady` one, asserting
 * before each that the steady project is not held.
 */
async function steadyBesideHeavy(shares: ProjectShares, heavy: string, ticks: number) {
  for (let tick = 0; tick < ticks; tick++) {
    for (let i = 0; i < 10; i++) await shares.runLocal(heavy, async () => undefined);
    assert.equal(shares.mustWait('proj_steady'), false, `the steady project held ${tick} tick(s) after ${heavy} came`);
    await asked(shares, ['proj_steady']);
    busyTicks(shares, 1);
  }
}

/**
 * One call of `calling` under way, started a while ago, while `proj_busy`'s runs start and end short activities
 * and keep the loop busy; ends the call and waits for it to end.
 */
async function busyBesideCall(shares: ProjectShares, calling: string): Promise<() => Promise<void>> {
  const call = held();
  const running = shares.run(calling, call.work);
  busyTicks(shares, 1);
  await busyTicksOf(shares, () => shares.run('proj_busy', async () => undefined));
  return async () => {
    call.end();
    await running;
  };
}

describe('projects taking turns on a busy worker', () => {
  it('holds the activities of a project that has used most of a busy loop, and lets the other project through', async () => {
    const shares = new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 60_000 });
    const hog = held();
    const steady = held();
    // The hog has 20 activities under way; the steady project one, and its runs start and end others meanwhile.
    const running = [...Array.from({ length: 20 }, () => shares.run('proj_hog', hog.work)), shares.run('proj_steady', steady.work)];
    await busyTicksAsking(shares, 20, ['proj_steady']);
    assert.equal(shares.mustWait('proj_hog'), true);
    assert.equal(shares.mustWait('proj_steady'), false);

    let started = false;
    const waiting = shares.run('proj_hog', async () => void (started = true));
    assert.equal(await shares.run('proj_steady', async () => 'at once'), 'at once');
    assert.equal(started, false, "the hog's next activity waits for its turn");

    // The hog's activities end, the loop is idle: its turn comes at the next tick.
    hog.end();
    steady.end();
    await Promise.all(running);
    busyTicks(shares, 40, 0);
    await waiting;
    assert.equal(started, true);
  });

  it('charges the loop to the projects whose activities start and end, not only to those with calls under way', async () => {
    const shares = new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 60_000 });
    // One call of one project is under way; meanwhile the other project's runs keep the loop busy.
    const endCall = await busyBesideCall(shares, 'proj_long_call');
    const used = shares.usage();
    assert.ok(used.get('proj_busy')! > 4 * used.get('proj_long_call')!, `charged ${JSON.stringify([...used])}`);
    // Once the call ends, its project's run goes on: the busy project, using more of the loop than it from then on,
    // takes turns with it.
    await endCall();
    assert.equal(shares.mustWait('proj_long_call'), false);
    for (let i = 0; i < 5; i++) await shares.runLocal('proj_busy', async () => undefined);
    await asked(shares, ['proj_long_call']);
    busyTicks(shares, 1);
    assert.equal(shares.mustWait('proj_busy'), true);
    assert.equal(shares.mustWait('proj_long_call'), false);
  });

  it('does not hold a project as a rival comes back from a quiet spell with little use counted, and holds the rival once it uses more', async () => {
    const shares = new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 60_000 });
    // The rival's one call has been under way (a host that has not answered) while the steady project kept the loop busy.
    const call = held();
    const calling = shares.run('proj_rival', call.work);
    busyTicks(shares, 1);
    await busyTicksAsking(shares, 20, ['proj_steady']);
    call.end();
    await calling;
    // The rival's runs go on, many short activities a tick; the steady project goes on as before.
    await steadyBesideHeavy(shares, 'proj_rival', 20);
    assert.equal(shares.mustWait('proj_rival'), true, 'the rival, using most of the loop since it came back, takes turns');
  });

  it('holds no project for a rival whose only activities are calls under way, which ask nothing of the loop', async () => {
    const shares = new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 60_000 });
    // A run of one project waits on a model that does not answer (a run watched by hundreds of streams, say),
    // while the other project's runs keep the loop busy, with nobody else asking for it.
    const endCall = await busyBesideCall(shares, 'proj_hanging');
    assert.equal(shares.mustWait('proj_busy'), false);
    let started = false;
    const next = shares.run('proj_busy', async () => void (started = true));
    assert.equal(started, true, "the busy project's next activity starts at once: a turn would go to no one");
    await next;
    await endCall();
  });

  it('does not hold a project for the loop it had alone before a new project came, and holds the newcomer once it uses more', async () => {
    const shares = new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 60_000 });
    // The steady project has had the busy loop to itself for two seconds.
    await busyTicksAsking(shares, 20, ['proj_steady']);
    // A new project comes and starts many short activities; the steady project goes on as before.
    await steadyBesideHeavy(shares, 'proj_new', 23);
    assert.equal(shares.mustWait('proj_new'), true, 'the newcomer, using most of the loop since it came, takes turns');
  });

  it("counts a run's local activities against its project, and never holds them", async () => {
    const shares = new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 60_000 });
    const call = held();
    const other = shares.run('proj_other', call.work);
    busyTicks(shares, 1);
    await busyTicksOf(shares, () => shares.runLocal('proj_bookkeeping', async () => undefined), ['proj_other']);
    assert.equal(shares.mustWait('proj_bookkeeping'), true);
    assert.equal(await shares.runLocal('proj_bookkeeping', async () => 'at once'), 'at once');
    assert.equal(shares.mustWait('proj_other'), false);
    call.end();
    await other;
  });

  it('never holds a project alone on the worker, however busy the loop', () => {
    const shares = new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 60_000 });
    const hog = held();
    for (let i = 0; i < 20; i++) void shares.run('proj_alone', hog.work);
    busyTicks(shares, 20, 100);
    assert.equal(shares.mustWait('proj_alone'), false);
    hog.end();
  });

  it('holds a project no longer once the others have stopped asking for the loop, though their use has not yet decayed', async () => {
    const shares = new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 60_000 });
    const hog = held();
    const other = held();
    for (let i = 0; i < 20; i++) void shares.run('proj_hog', hog.work);
    const others = Array.from({ length: 2 }, () => shares.run('proj_other', other.work));
    await busyTicksAsking(shares, 20, ['proj_other']);
    assert.equal(shares.mustWait('proj_hog'), true, 'held while the other project starts and ends activities');

    // The other project's activities end; a moment later the hog is alone on a loop it keeps busy.
    other.end();
    await Promise.all(others);
    busyTicks(shares, 5);
    assert.equal(shares.mustWait('proj_hog'), true, 'a gap between activities is no reason to stop taking turns');
    busyTicks(shares, 10);
    assert.ok((shares.usage().get('proj_other') ?? 0) > 1, "the other project's use is still remembered");
    assert.equal(shares.mustWait('proj_hog'), false);
    hog.end();
  });

  it('holds nobody while the loop is not busy', async () => {
    const shares = new ProjectShares({ busyUtilization: 0.5, maxWaitMs: 60_000 });
    const work = held();
    for (let i = 0; i < 20; i++) void shares.run('proj_many', work.work);
    void shares.run('proj_few', work.work);
    await busyTicksAsking(shares, 20, ['proj_few'], 20);
    assert.equal(shares.mustWait('proj_many'), false);
    work.end();
  });

  it('lets an activity start once it has waited the longest a turn may take', async () => {
    const shares = new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 50 });
    const work = held();
    for (let i = 0; i < 20; i++) void shares.run('proj_hog', work.work);
    void shares.run('proj_steady', work.work);
    await busyTicksAsking(shares, 20, ['proj_steady']);
    const began = Date.now();
    const waited = shares.run('proj_hog', async () => Date.now() - began);
    // The loop stays busy, the steady project asking for it and the hog over its share: only the time limit lets it start.
    const ticking = setInterval(() => void asked(shares, ['proj_steady']).then(() => busyTicks(shares, 1)), 10);
    try {
      assert.ok((await waited) >= 50);
    } finally {
      clearInterval(ticking);
      work.end();
    }
  });

  it('is off with no wait allowed or at a utilisation of 100%', () => {
    assert.equal(new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 0 }).enabled, false);
    assert.equal(new ProjectShares({ busyUtilization: 1, maxWaitMs: 2000 }).enabled, false);
    assert.equal(new ProjectShares({ busyUtilization: 0.3, maxWaitMs: 2000 }).enabled, true);
  });
});
