/** A member of the analysis pool (`analysis-thread.ts`): each message is one job, answered in turn. */
import { parentPort } from 'node:worker_threads';
import type { Table } from './content.js';
import { extractEntities, type EntityExtraction, type Passage } from './entities.js';
import { textTables } from './delimited-tables.js';

export type AnalysisJob = { job: 'entities'; passages: readonly Passage[] } | { job: 'tables'; pages: string[] };
export type AnalysisAnswer = { entities: EntityExtraction } | { tables: Table[] } | { failure: string };

const port = parentPort!;
port.on('message', (job: AnalysisJob) => {
  let answer: AnalysisAnswer;
  try {
    answer = job.job === 'entities' ? { entities: extractEntities(job.passages) } : { tables: textTables(job.pages) };
  } catch (err) {
    answer = { failure: (err as Error).message };
  }
  port.postMessage(answer);
});
