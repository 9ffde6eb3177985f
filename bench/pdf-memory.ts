/**
 * The worker's memory on a 100 MB PDF: a child process reads the document exactly as the content stage does
 * (batch by batch, every thread of the pool) and reports its peak resident memory (VmHWM) against its resident
 * memory once the engine was loaded, before the document. `node dist/bench/pdf-memory.js <file>` prints JSON.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createCanvas } from '@napi-rs/canvas';
import { PDFDocument, StandardFonts } from 'pdf-lib';

export const BIG_PDF_BYTES = 100 * 1024 * 1024;

export interface PdfMemoryFigures {
  megabytes: number;
  pages: number;
  seconds: number;
  /** Resident memory with the engine loaded, before the document. */
  idleRssMb: number;
  peakRssMb: number;
  /** (peak − idle) ÷ the file's size: how many times over the worker held the document. */
  timesFileSize: number;
}

/** A PDF of about `bytes`: pages of text, each with a photo-like (incompressible) image of its own. */
export async function writeBigPdf(path: string, bytes = BIG_PDF_BYTES): Promise<void> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const canvas = createCanvas(900, 900);
  const context = canvas.getContext('2d');
  const pixels = context.createImageData(900, 900);
  let size = 0;
  for (let page = 1; size < bytes; page++) {
    for (let i = 0; i < pixels.data.length; i++) pixels.data[i] = i % 4 === 3 ? 255 : (Math.random() * 256) | 0;
    context.putImageData(pixels, 0, 0);
    const jpeg = canvas.toBuffer('image/jpeg', 95);
    const image = await doc.embedJpg(jpeg);
    const p = doc.addPage([612, 792]);
    p.drawText(`Page ${page}: a photograph with its caption`, { x: 72, y: 740, size: 12, font });
    p.drawImage(image, { x: 72, y: 150, width: 468, height: 468 });
    size += jpeg.length;
  }
  await writeFile(path, await doc.save());
}

const vm = (status: string, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;

/** Runs in the child: the stage's reading, then the figures on stdout. */
async function readAsTheStageDoes(path: string): Promise<void> {
  const { pdfBatches } = await import('../workflows/extraction/pdf-stage.js');
  const idleRssMb = vm(await readFile('/proc/self/status', 'utf8'), 'VmRSS');
  const started = performance.now();
  let pages = 0;
  for await (const batch of pdfBatches(path, 1, () => {})) pages += batch.pages.length;
  const seconds = (performance.now() - started) / 1000;
  const peakRssMb = vm(await readFile('/proc/self/status', 'utf8'), 'VmHWM');
  console.log(JSON.stringify({ pages, seconds, idleRssMb, peakRssMb }));
  process.exit(0);
}

export async function measurePdfMemory(path: string, megabytes: number): Promise<PdfMemoryFigures> {
  const { stdout } = await promisify(execFile)(process.execPath, [fileURLToPath(import.meta.url), path], { maxBuffer: 1024 * 1024 });
  const child = JSON.parse(stdout.trim().split('\n').at(-1)!) as Omit<PdfMemoryFigures, 'megabytes' | 'timesFileSize'>;
  return { megabytes, ...child, timesFileSize: (child.peakRssMb - child.idleRssMb) / megabytes };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2]) await readAsTheStageDoes(process.argv[2]);
