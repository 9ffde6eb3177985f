/** A page's text layer as positioned words, grouped into lines in reading order. */
import type { PageViewport } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { TextItem, TextMarkedContent } from 'pdfjs-dist/types/src/display/api.js';
import { storableText } from '../../../../models/storable-text.js';

/** A word in PDF points, origin at the page's top-left; `y` is the top of its em box. */
export interface Word {
  text: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Line {
  words: Word[];
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * Splits pdfjs's text items (runs of glyphs, often whole lines) into words. An item's width is shared among its
 * characters evenly: exact for the words' order and gaps, approximate for their edges in proportional fonts.
 */
export function wordsOf(items: (TextItem | TextMarkedContent)[], viewport: PageViewport): Word[] {
  const words: Word[] = [];
  for (const item of items) {
    if (!('str' in item)) continue;
    // PostgreSQL text cannot hold NUL, which some PDFs' text layers contain.
    const str = storableText(item.str);
    if (str.trim() === '') continue;
    // The item's quadrilateral in PDF space: its baseline from (e, f) along (a, b) for `width`, raised by (c, d),
    // the text matrix's vertical vector, whose length is the font size.
    const [a, b, c, d, e, f] = item.transform as [number, number, number, number, number, number];
    const scale = Math.hypot(a, b) || 1;
    const [dx, dy] = [(a / scale) * item.width, (b / scale) * item.width];
    const corners = [
      viewport.convertToViewportPoint(e, f),
      viewport.convertToViewportPoint(e + dx, f + dy),
      viewport.convertToViewportPoint(e + c, f + d),
      viewport.convertToViewportPoint(e + dx + c, f + dy + d),
    ];
    const left = Math.min(...corners.map((p) => p[0]!));
    const right = Math.max(...corners.map((p) => p[0]!));
    const upper = Math.min(...corners.map((p) => p[1]!));
    const lower = Math.max(...corners.map((p) => p[1]!));
    const perChar = (right - left) / str.length;
    for (const match of str.matchAll(/\S+/g)) {
      words.push({
        text: match[0],
        x: left + match.index * perChar,
        y: upper,
        width: match[0].length * perChar,
        height: Math.max(lower - upper, 1),
      });
    }
  }
  return words;
}

/** Groups words whose vertical centres are within half a line of each other, top to bottom, then left to right. */
export function linesOf(words: Word[]): Line[] {
  const sorted = [...words].sort((p, q) => p.y + p.height / 2 - (q.y + q.height / 2) || p.x - q.x);
  const lines: Line[] = [];
  let current: Word[] = [];
  let centre = 0;
  for (const word of sorted) {
    const wordCentre = word.y + word.height / 2;
    if (current.length > 0 && Math.abs(wordCentre - centre) > Math.min(word.height, current[0]!.height) / 2) {
      lines.push(lineOf(current));
      current = [];
    }
    if (current.length === 0) centre = wordCentre;
    current.push(word);
  }
  if (current.length > 0) lines.push(lineOf(current));
  return lines;
}

function lineOf(words: Word[]): Line {
  words.sort((p, q) => p.x - q.x);
  // Loops, not Math.min(...words): a line of a few hundred thousand words is past what a call's arguments hold.
  let [x, y, right, bottom] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const w of words) {
    [x, y] = [Math.min(x, w.x), Math.min(y, w.y)];
    [right, bottom] = [Math.max(right, w.x + w.width), Math.max(bottom, w.y + w.height)];
  }
  return { words, x, y, width: right - x, height: bottom - y };
}

/** A line's words with spaces between them, except where two pieces of one word touch. */
export function lineText(words: Word[]): string {
  let text = '';
  let previous: Word | undefined;
  for (const word of words) {
    if (previous) text += word.x - (previous.x + previous.width) > previous.height * 0.1 ? ' ' : '';
    text += word.text;
    previous = word;
  }
  return text;
}

/** Lines joined by newlines, with a blank line where the gap above a line is wider than a line and a half. */
export function pageText(lines: Line[]): string {
  let text = '';
  let previous: Line | undefined;
  for (const line of lines) {
    if (previous) text += line.y - (previous.y + previous.height) > previous.height * 1.5 ? '\n\n' : '\n';
    text += lineText(line.words);
    previous = line;
  }
  return text;
}
