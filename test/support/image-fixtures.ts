/**
 * Images of known text, drawn here so OCR tests need no binary fixtures: black DejaVu Sans on white, with
 * the box of every word as drawn, in pixels from the top-left corner.
 */
import { createCanvas, GlobalFonts, type SKRSContext2D } from '@napi-rs/canvas';
import type { Box } from '../../workflows/extraction/engines/content.js';

const FONT_PATH = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';
const FONT_FAMILY = 'DejaVu Sans';
let fontRegistered = false;

export interface DrawnWord {
  text: string;
  box: Box;
}

export interface TextImage {
  png: Buffer;
  jpeg: Buffer;
  width: number;
  height: number;
  words: DrawnWord[];
}

export interface TextImageOptions {
  /** Pixels; 32 unless told. */
  fontSize?: number;
  /** White space around the text, in pixels. */
  margin?: number;
  /** Canvas size; by default just large enough for the text. */
  width?: number;
  height?: number;
}

/** One line of text per entry, drawn top to bottom. */
export function textImage(lines: string[], options: TextImageOptions = {}): TextImage {
  return drawRows(
    lines.map((line) => [line]),
    options,
    0,
  );
}

/**
 * A borderless table: one entry per row, its cells left-aligned in columns `columnGap` pixels apart
 * (after the widest cell of the column).
 */
export function tableImage(rows: string[][], options: TextImageOptions & { columnGap?: number } = {}): TextImage {
  return drawRows(rows, options, options.columnGap ?? 64);
}

/** An A4 page at `dpi`, filled with lines of ordinary prose in 11 pt type. */
export function a4PageImage(dpi = 150): TextImage {
  const width = Math.round((210 / 25.4) * dpi);
  const height = Math.round((297 / 25.4) * dpi);
  const fontSize = Math.round((11 / 72) * dpi);
  const margin = Math.round(dpi * 0.8);
  const linesThatFit = Math.floor((height - 2 * margin) / (fontSize * 1.5));
  const lines = Array.from({ length: linesThatFit }, (_, i) => PROSE[i % PROSE.length]!);
  return drawRows(
    lines.map((line) => [line]),
    { fontSize, margin, width, height },
    0,
  );
}

const PROSE = [
  'The quarterly report covers revenue, costs and the outlook for the',
  'next two years. Sales grew in every region except the north, where',
  'a late delivery of parts held back production for three weeks.',
  'Customers asked for shorter lead times and clearer invoices; both',
  'are planned for the spring release of the ordering system.',
  'Staff numbers stayed level while training hours rose by a fifth.',
];

function drawRows(rows: string[][], options: TextImageOptions, columnGap: number): TextImage {
  registerFont();
  const fontSize = options.fontSize ?? 32;
  const margin = options.margin ?? 40;
  const lineHeight = Math.round(fontSize * 1.5);
  const font = `${fontSize}px "${FONT_FAMILY}"`;

  const measure = createCanvas(1, 1).getContext('2d');
  measure.font = font;
  const columns = Math.max(...rows.map((row) => row.length));
  const columnWidths = Array.from({ length: columns }, (_, c) =>
    Math.max(...rows.map((row) => (row[c] === undefined ? 0 : measure.measureText(row[c]!).width))),
  );
  const columnStarts = columnWidths.map((_, c) => margin + columnWidths.slice(0, c).reduce((sum, w) => sum + w + columnGap, 0));
  const width = options.width ?? Math.ceil(columnStarts[columns - 1]! + columnWidths[columns - 1]! + margin);
  const height = options.height ?? margin * 2 + lineHeight * rows.length;

  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = '#000000';
  ctx.font = font;
  ctx.textBaseline = 'alphabetic';

  const words: DrawnWord[] = [];
  rows.forEach((row, r) => {
    const baseline = margin + r * lineHeight + fontSize;
    row.forEach((cell, c) => {
      ctx.fillText(cell, columnStarts[c]!, baseline);
      words.push(...wordsOf(ctx, cell, columnStarts[c]!, baseline));
    });
  });
  return { png: canvas.toBuffer('image/png'), jpeg: canvas.toBuffer('image/jpeg', 92), width, height, words };
}

/** The boxes of the space-separated words of `text` drawn at (x, baseline). */
function wordsOf(ctx: SKRSContext2D, text: string, x: number, baseline: number): DrawnWord[] {
  const words: DrawnWord[] = [];
  for (const match of text.matchAll(/\S+/g)) {
    const before = ctx.measureText(text.slice(0, match.index)).width;
    const metrics = ctx.measureText(match[0]);
    words.push({
      text: match[0],
      box: {
        x: x + before,
        y: baseline - metrics.actualBoundingBoxAscent,
        width: metrics.width,
        height: metrics.actualBoundingBoxAscent + metrics.actualBoundingBoxDescent,
      },
    });
  }
  return words;
}

function registerFont(): void {
  if (fontRegistered) return;
  GlobalFonts.registerFromPath(FONT_PATH, FONT_FAMILY);
  fontRegistered = true;
}
