/** A member of the entity extraction pool (`entities-thread.ts`): each message is a slice's passages, answered in turn. */
import { parentPort } from 'node:worker_threads';
import { extractEntities, type EntityExtraction, type Passage } from './entities.js';

export type EntitiesAnswer = { extraction: EntityExtraction } | { failure: string };

const port = parentPort!;
port.on('message', (passages: Passage[]) => {
  let answer: EntitiesAnswer;
  try {
    answer = { extraction: extractEntities(passages) };
  } catch (err) {
    answer = { failure: (err as Error).message };
  }
  port.postMessage(answer);
});
