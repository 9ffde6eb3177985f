/** A page as a PNG, for OCR of pages that have no text layer. */
import type { Canvas } from '@napi-rs/canvas';
import type { RenderParameters } from 'pdfjs-dist/types/src/display/api.js';
import { extractionErrorOf, openPdf, type PdfSource } from './document.js';

/**
 * The longest side a page is rendered at: OCR scales any larger image down to this first, so more pixels would
 * only cost memory (a page may be 200 inches on a side, 57,600 pixels at 4 × 72 dpi).
 */
export const MAX_RENDER_SIDE = 4000;

/** `scale` 1 is 72 dpi; OCR wants about 300 dpi, so ≈ 4. A page larger than `MAX_RENDER_SIDE` is rendered smaller. */
export async function renderPage(source: PdfSource, pageNumber: number, scale: number): Promise<Buffer> {
  const doc = await openPdf(source);
  try {
    if (!Number.isInteger(pageNumber) || pageNumber < 1 || pageNumber > doc.numPages) {
      throw new RangeError(`The PDF has ${doc.numPages} pages; there is no page ${pageNumber}.`);
    }
    const page = await doc.getPage(pageNumber);
    const { width, height } = page.getViewport({ scale });
    const viewport = page.getViewport({ scale: scale * Math.min(1, MAX_RENDER_SIDE / Math.max(width, height)) });
    // pdfjs's Node canvas factory makes @napi-rs/canvas canvases.
    const { canvas } = (doc.canvasFactory as { create(w: number, h: number): { canvas: Canvas } }).create(
      Math.ceil(viewport.width),
      Math.ceil(viewport.height),
    );
    await page.render({ canvas: canvas as unknown as RenderParameters['canvas'], viewport, annotationMode: 0 }).promise;
    page.cleanup();
    return await canvas.encode('png');
  } catch (err) {
    throw err instanceof RangeError ? err : extractionErrorOf(err);
  } finally {
    await doc.destroy();
  }
}
