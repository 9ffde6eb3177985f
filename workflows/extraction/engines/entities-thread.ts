/**
 * Entities and relations found in a thread of their own. The analysis is synchronous and takes seconds for a slice
 * of a large file (about 2 s for 200,000 characters): in the worker's own thread, each slice held every other
 * project's runs, tool calls and heartbeats that long, a hundred times over for one large upload.
 */
import { Worker } from 'node:worker_threads';
import type { EntityExtraction, Passage } from './entities.js';
import type { EntitiesAnswer } from './entities-worker.js';

/** A slice's analysis needs tens of megabytes; a heap of its own keeps a runaway one from the process's. */
const THREAD_HEAP_MB = 256;

/** Threads kept between slices; unreferenced while idle, so they never keep the process alive. */
const idleWorkers: Worker[] = [];

/** What `extractEntities(passages)` finds, found in a pool thread. */
export async function extractEntitiesInThread(passages: readonly Passage[]): Promise<EntityExtraction> {
  const worker =
    idleWorkers.pop() ??
    new Worker(new URL('./entities-worker.js', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
  worker.ref();
  let answer: EntitiesAnswer;
  try {
    answer = await new Promise<EntitiesAnswer>((resolve, reject) => {
      const finish = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const onMessage = (message: EntitiesAnswer) => {
        finish();
        resolve(message);
      };
      const onError = (err: Error) => {
        finish();
        reject(err);
      };
      const onExit = (code: number) => onError(new Error(`An entity extraction thread exited with code ${code}.`));
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      worker.postMessage(passages);
    });
  } catch (err) {
    void worker.terminate();
    throw err;
  }
  worker.unref();
  idleWorkers.push(worker);
  if ('failure' in answer) throw new Error(answer.failure);
  return answer.extraction;
}
