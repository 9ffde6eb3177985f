/** A member of the analysis pool (`analysis-thread.ts`): each message is one job, answered in turn. */
import { parentPort } from 'node:worker_threads';
import { bufferOf } from './analysis-thread.js';
import type { FileErrorCode } from '../../../records/files.js';
import type { Table } from './content.js';
import { extractEntities, type EntityExtraction, type Passage } from './entities.js';
import { textTables } from './delimited-tables.js';
import { ExtractionError } from './errors.js';
import { prepareForOcr, type OcrImage } from './ocr-image.js';
import { visionImageOf, type VisionImage } from './vision-image.js';

export type AnalysisJob =
  | { job: 'entities'; passages: readonly Passage[] }
  | { job: 'tables'; pages: string[] }
  | { job: 'ocrImage'; image: Uint8Array; maxLongSide: number }
  | { job: 'visionImage'; image: Uint8Array };
export type AnalysisAnswer =
  | { entities: EntityExtraction }
  | { tables: Table[] }
  | { ocrImage: OcrImage }
  | { visionImage: VisionImage }
  | { failure: string; code?: FileErrorCode };

async function answerTo(job: AnalysisJob): Promise<AnalysisAnswer> {
  switch (job.job) {
    case 'entities':
      return { entities: extractEntities(job.passages) };
    case 'tables':
      return { tables: textTables(job.pages) };
    case 'ocrImage':
      return { ocrImage: await prepareForOcr(bufferOf(job.image), job.maxLongSide) };
    case 'visionImage':
      return { visionImage: await visionImageOf(bufferOf(job.image)) };
  }
}

const port = parentPort!;
port.on('message', (job: AnalysisJob) => {
  answerTo(job).then(
    (answer) => port.postMessage(answer),
    (err: Error) => port.postMessage({ failure: err.message, code: err instanceof ExtractionError ? err.code : undefined }),
  );
});
