import assert from 'node:assert/strict';
import { StopList } from '../../cli/shutdown.js';

const quiet = { info: () => {}, error: () => {} };

/** A service that records when it stops, and can be made to take a while or to fail. */
function service(name: string, stopped: string[], options: { until?: Promise<void>; fails?: boolean } = {}) {
  return {
    async stop() {
      await options.until;
      stopped.push(name);
      if (options.fails) throw new Error(`${name} failed to stop`);
    },
  };
}

describe('stopping what a command started', () => {
  it('stops the services last first', async () => {
    const stopped: string[] = [];
    const stops = new StopList(quiet);
    for (const name of ['postgres', 'temporal', 'worker', 'api']) stops.add(service(name, stopped));
    await stops.stopAll();
    assert.deepEqual(stopped, ['api', 'worker', 'temporal', 'postgres']);
  });

  it('stops each service once when asked twice, and on the second call only what was added since', async () => {
    const stopped: string[] = [];
    const stops = new StopList(quiet);
    for (const name of ['postgres', 'temporal', 'worker']) stops.add(service(name, stopped));
    await stops.stopAll();
    stops.add(service('api', stopped)); // start-up went on while the first stop ran
    await stops.stopAll();
    assert.deepEqual(stopped, ['worker', 'temporal', 'postgres', 'api']);
  });

  it('lets a second call wait for the first, so that two calls never stop services out of order', async () => {
    const stopped: string[] = [];
    const stops = new StopList(quiet);
    let releaseWorker!: () => void;
    stops.add(service('postgres', stopped));
    stops.add(service('temporal', stopped));
    stops.add(service('worker', stopped, { until: new Promise((resolve) => (releaseWorker = resolve)) }));
    const first = stops.stopAll();
    const second = stops.stopAll();
    releaseWorker();
    await Promise.all([first, second]);
    assert.deepEqual(stopped, ['worker', 'temporal', 'postgres']);
  });

  it('names what is stopping while it stops, for the log should the shutdown grace run out, and nothing once all have stopped', async () => {
    const stopped: string[] = [];
    const stops = new StopList(quiet);
    let releaseWorker!: () => void;
    stops.add(service('postgres', stopped), 'PostgreSQL');
    stops.add(service('worker', stopped, { until: new Promise((resolve) => (releaseWorker = resolve)) }), 'the worker');
    assert.equal(stops.stillStopping(), undefined);
    const stopping = stops.stopAll();
    await Promise.resolve();
    assert.equal(stops.stillStopping(), 'the worker');
    releaseWorker();
    await stopping;
    assert.equal(stops.stillStopping(), undefined);
  });

  it('goes on stopping the rest when one service fails to stop, and reports the failure', async () => {
    const stopped: string[] = [];
    const errors: string[] = [];
    const stops = new StopList({ info: () => {}, error: (obj) => errors.push((obj as { err: Error }).err.message) });
    stops.add(service('postgres', stopped));
    stops.add(service('temporal', stopped, { fails: true }));
    stops.add(service('api', stopped));
    await stops.stopAll();
    assert.deepEqual(stopped, ['api', 'temporal', 'postgres']);
    assert.deepEqual(errors, ['temporal failed to stop']);
  });
});
