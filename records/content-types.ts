/**
 * What the extraction engines produce. Every engine is a pure function of the file's bytes (no database, no
 * Temporal): the activities store what it returns. Coordinates are PDF points (1/72 inch) for PDFs and pixels
 * for images, with the origin at the page's top-left corner.
 */

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** One page of text: a PDF page, a form-feed-separated part of a text file, or an image. */
export interface PageText {
  /** 1-based. */
  page: number;
  text: string;
  /** How the text was obtained: the PDF's own text layer, OCR of the rendered page or image, or the file itself. */
  source: 'text_layer' | 'ocr' | 'plain_text';
  /** OCR's mean word confidence, 0–100; absent for text that was not recognised. */
  confidence?: number;
}

/** A stretch of transcribed speech. */
export interface TranscriptSegment {
  start_ms: number;
  end_ms: number;
  text: string;
  words: { word: string; start_ms: number; end_ms: number; probability: number }[];
}

export interface TableCell {
  /** 0-based position of the cell's top-left grid slot. */
  row: number;
  column: number;
  row_span: number;
  column_span: number;
  text: string;
  box: Box | null;
}

export interface Table {
  /** 1-based page; null for a table with no page (none today). */
  page: number | null;
  box: Box | null;
  rows: number;
  columns: number;
  /** Row-major, one entry per cell; a spanning cell appears once, at its top-left slot. */
  cells: TableCell[];
  /** Delimited tables only: the table had more rows than the ones kept (at most 1,000, or 50,000 cells). */
  truncated?: boolean;
  /** How it was found: `ruled` (drawn rules), `aligned` (borderless), `delimited` (CSV, TSV, Markdown pipes). */
  detection: 'ruled' | 'aligned' | 'delimited';
}
