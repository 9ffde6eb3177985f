/**
 * A pool member in its own thread. It stays loaded between documents (loading pdfjs and warming it up costs
 * about as much as a hundred pages); for each document it is sent, it opens it once and takes page ranges, or
 * renders one page of it.
 */
import { parentPort } from 'node:worker_threads';
import type { PDFDocumentProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { ExtractionError } from '../errors.js';
import { openPdf, type PdfSource } from './document.js';
import { extractOpenPages, type PdfExtraction } from './pages.js';
import { renderPage } from './render.js';

export type WorkerRequest =
  | { type: 'open'; source: PdfSource; tables: boolean }
  | { type: 'range'; from: number; to: number }
  | { type: 'render'; source: PdfSource; page: number; scale: number }
  | { type: 'close' };

export type WorkerMessage =
  | { type: 'loaded' }
  | { type: 'ready'; pageCount: number }
  | { type: 'page' }
  | { type: 'done'; result: PdfExtraction }
  | { type: 'rendered'; png: Uint8Array }
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
// pdfjs is loaded: from now on, what a request takes is the document's doing.
send({ type: 'loaded' });

async function handle(request: WorkerRequest): Promise<void> {
  if (request.type === 'open') {
    tables = request.tables;
    doc = await openPdf(request.source);
    send({ type: 'ready', pageCount: doc.numPages });
  } else if (request.type === 'range') {
    if (!doc) throw new Error('No document is open.');
    send({ type: 'done', result: await extractOpenPages(doc, { ...request, tables, onProgress: () => send({ type: 'page' }) }) });
  } else if (request.type === 'render') {
    send({ type: 'rendered', png: await renderPage(request.source, request.page, request.scale) });
  } else {
    await doc?.destroy();
    doc = null;
  }
}
