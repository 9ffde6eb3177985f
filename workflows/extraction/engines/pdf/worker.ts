/**
 * A pool member in its own thread. It stays loaded between documents (loading pdfjs and warming it up costs
 * about as much as a hundred pages); for each document it is sent, it opens it once and takes page ranges.
 */
import { parentPort } from 'node:worker_threads';
import type { PDFDocumentProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { ExtractionError } from '../errors.js';
import { openPdf, type PdfSource } from './document.js';
import { extractOpenPages, type PdfExtraction } from './pages.js';

export type WorkerRequest =
  { type: 'open'; source: PdfSource; tables: boolean } | { type: 'range'; from: number; to: number } | { type: 'close' };

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'page' }
  | { type: 'done'; result: PdfExtraction }
  | { type: 'failed'; code: ExtractionError['code'] | null; message: string };

const port = parentPort!;
const send = (message: WorkerMessage) => port.postMessage(message);
const fail = (err: unknown) =>
  send({ type: 'failed', code: err instanceof ExtractionError ? err.code : null, message: (err as Error).message });

let doc: PDFDocumentProxy | null = null;
let tables = true;
// Requests are handled one after another, so a close finishes before the next document opens.
let queue = Promise.resolve();

port.on('message', (request: WorkerRequest) => {
  queue = queue.then(() => handle(request)).catch(fail);
});

async function handle(request: WorkerRequest): Promise<void> {
  if (request.type === 'open') {
    tables = request.tables;
    doc = await openPdf(request.source);
    send({ type: 'ready' });
  } else if (request.type === 'range') {
    if (!doc) throw new Error('No document is open.');
    send({ type: 'done', result: await extractOpenPages(doc, { ...request, tables, onProgress: () => send({ type: 'page' }) }) });
  } else {
    await doc?.destroy();
    doc = null;
  }
}
