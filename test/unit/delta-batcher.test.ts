import assert from 'node:assert/strict';
import { DeltaBatcher } from '../../workflows/runs/deltas.js';

/** A log the batcher writes to, which refuses writes while `down` (as a database restarting does). */
function eventLog() {
  const written: string[] = [];
  const log = {
    down: false,
    written,
    async write(text: string) {
      if (log.down) throw new Error('the database is unavailable');
      written.push(text);
    },
  };
  return log;
}

describe('streamed text written in batches', () => {
  it('writes the text in order, in fewer writes than pieces', async () => {
    const log = eventLog();
    const batcher = new DeltaBatcher((text) => log.write(text));
    for (const piece of ['Once ', 'upon ', 'a ', 'time.']) batcher.add(piece);
    await batcher.flush();
    assert.equal(log.written.join(''), 'Once upon a time.');
    assert.ok(log.written.length < 4);
  });

  it('keeps text whose write failed, ahead of what came after, and writes it all once the log takes writes again', async () => {
    const log = eventLog();
    const batcher = new DeltaBatcher((text) => log.write(text));
    batcher.add('High tide ');
    await batcher.flush();
    log.down = true;
    batcher.add('is at ');
    await assert.rejects(batcher.flush(), /unavailable/);
    batcher.add('noon.');
    await assert.rejects(batcher.flush(), /unavailable/);
    log.down = false;
    await batcher.flush();
    assert.deepEqual(log.written, ['High tide ', 'is at noon.']);
  });
});
