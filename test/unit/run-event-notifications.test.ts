import assert from 'node:assert/strict';
import { notifiedEvent } from '../../records/run-events.js';

describe('run-event notifications', () => {
  it('carry the run id and the event type, so that a wait for the run to end wakes only then', () => {
    assert.deepEqual(notifiedEvent('run_abc run.completed'), { runId: 'run_abc', type: 'run.completed' });
    assert.deepEqual(notifiedEvent('run_abc output_text.delta'), { runId: 'run_abc', type: 'output_text.delta' });
  });

  it('read a bare run id, as an earlier version sends it, as an event of unknown type', () => {
    assert.deepEqual(notifiedEvent('run_abc'), { runId: 'run_abc', type: null });
  });
});
