/**
 * The extraction engines, each against a baseline or a goal measured in the same run (`npm run bench -- extraction`):
 * PDF pages/s against poppler's `pdftotext` on the same 200-page file (goal: at least 0.3 of it), OCR seconds
 * per A4 page, speech real-time factor (processing seconds ÷ audio seconds, warm sidecar), entity extraction
 * throughput, and the worker's peak resident memory reading a 100 MB PDF as the content stage does (goal: under
 * twice the file's size above its idle memory).
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurePdf, type PdfFigures } from './pdf.js';
import { benchOcr, type OcrBenchResult } from './ocr.js';
import { measureSpeech, type SpeechFigures } from './speech.js';
import { measureEntities, type EntityFigures } from './entities.js';
import { measurePdfMemory, writeBigPdf, type PdfMemoryFigures } from './pdf-memory.js';
import { useSpeechPython } from '../workflows/extraction/engines/speech/transcriber.js';
import { findTool } from '../cli/tools.js';

export const PDF_RATIO_GOAL = 0.3;
export const PDF_MEMORY_GOAL_TIMES = 2;

export interface ExtractionFigures {
  pdf: PdfFigures;
  ocr: OcrBenchResult;
  speech: SpeechFigures;
  entities: EntityFigures;
  pdfMemory: PdfMemoryFigures;
}

export async function measureExtraction(): Promise<ExtractionFigures> {
  console.log('  PDF against pdftotext');
  const pdf = await measurePdf();
  console.log('  OCR');
  const ocr = await benchOcr();
  console.log('  speech');
  useSpeechPython(findTool('speech-python'));
  const speech = await measureSpeech({ samples: 3 });
  console.log('  entities');
  const entities = measureEntities();
  console.log('  a 100 MB PDF');
  const dir = await mkdtemp(join(tmpdir(), 'agentplane-bench-big-pdf-'));
  try {
    const path = join(dir, 'big.pdf');
    await writeBigPdf(path);
    const pdfMemory = await measurePdfMemory(path, (await stat(path)).size / (1024 * 1024));
    return { pdf, ocr, speech, entities, pdfMemory };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
