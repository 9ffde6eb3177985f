import assert from 'node:assert/strict';
import { WorkQueue } from '../../controllers/work-queue.js';

describe("the controller's work queue", () => {
  it('hands out a key added twice once', async () => {
    const queue = new WorkQueue();
    queue.add('default/a');
    queue.add('default/a');
    queue.add('default/b');
    assert.equal(await queue.next(), 'default/a');
    assert.equal(await queue.next(), 'default/b');
    assert.equal(queue.depth, 0);
  });

  it('never hands out a key being processed; one added meanwhile comes back once it is done', async () => {
    const queue = new WorkQueue();
    queue.add('default/a');
    const first = await queue.next();
    queue.add('default/a');
    queue.add('default/b');
    assert.equal(await queue.next(), 'default/b');
    queue.done(first!);
    assert.equal(await queue.next(), 'default/a');
  });

  it('backs a failing key off exponentially, and starts over after a success', () => {
    const queue = new WorkQueue({ baseDelayMs: 100, maxDelayMs: 1_000, ratePerSecond: 1_000, burst: 1_000 });
    const delays = [1, 2, 3, 4, 5, 6].map(() => queue.retry('default/a'));
    assert.deepEqual(delays, [100, 200, 400, 800, 1_000, 1_000]);
    queue.forget('default/a');
    assert.equal(queue.retry('default/a'), 100);
    queue.shutDown();
  });

  it('spaces retries of many keys by the global rate limit once the burst is spent', () => {
    const queue = new WorkQueue({ baseDelayMs: 1, ratePerSecond: 10, burst: 5 });
    const delays = Array.from({ length: 10 }, (_, i) => queue.retry(`default/key-${i}`));
    assert.deepEqual(delays.slice(0, 5), [1, 1, 1, 1, 1]);
    // Then one every 100 ms.
    for (const [i, delay] of delays.slice(5).entries())
      assert.ok(Math.abs(delay - (i + 1) * 100) <= 10, `retry ${i + 5} after ${delay} ms`);
    queue.shutDown();
  });

  it('honours a retry delay the failure asked for (Retry-After)', () => {
    const queue = new WorkQueue({ baseDelayMs: 100 });
    assert.equal(queue.retry('default/a', 5_000), 5_000);
    queue.shutDown();
  });

  it('releases waiting workers when it shuts down', async () => {
    const queue = new WorkQueue();
    const waiting = queue.next();
    queue.shutDown();
    assert.equal(await waiting, undefined);
  });
});
