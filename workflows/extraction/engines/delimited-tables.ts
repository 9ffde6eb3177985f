/**
 * Tables written as text: Markdown pipe tables, TSV runs and CSV blocks (RFC 4180 quoting). Prose with
 * commas must not count, so a CSV block is a whole paragraph (between blank lines or the page's ends) of at
 * least two records with the same number (≥ 2) of fields, and not mostly sentences.
 */
import type { Table } from './content.js';

/** A table keeps at most this many rows (and cells); the rest stays in the page's text. */
export const MAX_TABLE_ROWS = 1_000;
export const MAX_TABLE_CELLS = 50_000;
/** A page yields at most this many tables. */
export const MAX_TABLES_PER_PAGE = 500;

/**
 * A text file's first this many characters are read for tables (about 300 MB of memory and a second or two at
 * most); past them, its pages are kept whole but hold no table, and a table going on past them ends there.
 */
export const MAX_TABLE_TEXT_CHARACTERS = 20_000_000;

/**
 * A text file yields at most this many tables and cells; past them, no more tables are kept. Each is a row stored
 * and an object in memory: 20 MB of two-row CSV paragraphs was two million tables, more than a gigabyte of heap.
 */
export const MAX_TABLES_PER_FILE = 10_000;
export const MAX_CELLS_PER_FILE = 1_000_000;

/** The tables written in a text file's pages. */
export function textTables(pages: string[]): Table[] {
  const tables: Table[] = [];
  let [left, cells] = [MAX_TABLE_TEXT_CHARACTERS, 0];
  for (const [i, text] of pages.entries()) {
    if (left <= 0) break;
    // Cut after a whole line, so that no row is read in part.
    const read = text.length <= left ? text : text.slice(0, text.lastIndexOf('\n', left) + 1);
    for (const table of findDelimitedTables(read, i + 1)) {
      cells += table.cells.length;
      if (tables.length === MAX_TABLES_PER_FILE || cells > MAX_CELLS_PER_FILE) return tables;
      tables.push(table);
    }
    left -= text.length;
  }
  return tables;
}

export function findDelimitedTables(pageText: string, page: number): Table[] {
  const text = pageText.replace(/\r\n?/g, '\n');
  const lines = text.split('\n');
  const lineStarts: number[] = [];
  for (let i = 0, offset = 0; i < lines.length; offset += lines[i]!.length + 1, i++) lineStarts.push(offset);

  const tables: Table[] = [];
  let i = 0;
  while (i < lines.length) {
    if (isBlank(lines[i]!)) {
      i++;
      continue;
    }
    const found =
      markdownTableAt(lines, i) ??
      tsvRunAt(lines, i) ??
      (i === 0 || isBlank(lines[i - 1]!) ? csvParagraphAt(text, lineStarts[i]!, lineStarts) : null);
    if (found) {
      if (tables.length < MAX_TABLES_PER_PAGE) tables.push(tableOf(found, page));
      i = found.nextLine;
    } else {
      i++;
    }
  }
  return tables;
}

interface Found {
  /** The rows kept: at most MAX_TABLE_ROWS. */
  rows: string[][];
  /** Every row of the table, kept or not. */
  total: number;
  nextLine: number;
}

function tableOf(found: Found, page: number): Table {
  const columns = found.rows[0]!.length;
  const rows = found.rows.slice(0, Math.max(1, Math.min(MAX_TABLE_ROWS, Math.floor(MAX_TABLE_CELLS / columns))));
  return {
    page,
    box: null,
    rows: rows.length,
    columns,
    truncated: found.total > rows.length,
    cells: rows.flatMap((row, r) => row.map((text, c) => ({ row: r, column: c, row_span: 1, column_span: 1, text, box: null }))),
    detection: 'delimited',
  };
}

const isBlank = (line: string) => line.trim() === '';

// ---- Markdown (GitHub-flavoured): a header row, a delimiter row of ---, :--, --: or :-:, then body rows.

const DELIMITER_CELL = /^:?-+:?$/;

function markdownTableAt(lines: string[], start: number): Found | null {
  const header = lines[start]!;
  const delimiter = lines[start + 1];
  if (delimiter === undefined || !header.includes('|') || !delimiter.includes('|')) return null;
  const headerCells = pipeCells(header);
  const delimiterCells = pipeCells(delimiter);
  if (delimiterCells.length !== headerCells.length || !delimiterCells.every((cell) => DELIMITER_CELL.test(cell))) return null;

  const rows = [headerCells];
  let total = 1;
  let next = start + 2;
  for (; next < lines.length && !isBlank(lines[next]!) && lines[next]!.includes('|'); next++, total++) {
    if (rows.length >= MAX_TABLE_ROWS) continue;
    // Short rows are padded and long ones cut to the header's width, as GitHub renders them.
    const cells = pipeCells(lines[next]!).slice(0, headerCells.length);
    while (cells.length < headerCells.length) cells.push('');
    rows.push(cells);
  }
  return { rows, total, nextLine: next };
}

/** The cells of a pipe-table row: outer pipes optional, `\|` is a literal pipe, cells trimmed. */
function pipeCells(line: string): string[] {
  let body = line.trim();
  if (body.startsWith('|')) body = body.slice(1);
  if (body.endsWith('|') && !body.endsWith('\\|')) body = body.slice(0, -1);
  return body.split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll('\\|', '|'));
}

// ---- TSV: two or more consecutive lines with the same number (≥ 2) of tab-separated fields.

function tsvRunAt(lines: string[], start: number): Found | null {
  const width = lines[start]!.split('\t').length;
  if (width < 2) return null;
  const rows: string[][] = [];
  let next = start;
  for (; next < lines.length; next++) {
    const fields = lines[next]!.split('\t');
    if (fields.length !== width) break;
    if (rows.length < MAX_TABLE_ROWS) rows.push(fields);
  }
  return next - start >= 2 ? { rows, total: next - start, nextLine: next } : null;
}

// ---- CSV (RFC 4180): fields separated by commas; a quoted field may hold commas, newlines and "" for ".

function csvParagraphAt(text: string, offset: number, lineStarts: number[]): Found | null {
  const rows: string[][] = [];
  const quotedCells: boolean[] = [];
  let total = 0;
  let width = 0;
  let position = offset;
  while (position < text.length) {
    const lineEnd = text.indexOf('\n', position);
    if (isBlank(text.slice(position, lineEnd === -1 ? text.length : lineEnd))) break;
    const record = csvRecordAt(text, position);
    if (!record) return null;
    if (record.fields.length < 2 || (total > 0 && record.fields.length !== width)) return null;
    width = record.fields.length;
    total++;
    if (rows.length < MAX_TABLE_ROWS) {
      rows.push(record.fields);
      quotedCells.push(...record.quoted);
    }
    position = record.next;
  }
  if (total < 2) return null;
  // Lines of prose that happen to hold the same number of commas: half or more of the cells are unquoted runs of four or more words.
  const cells = rows.flat();
  const sentences = cells.filter((cell, i) => !quotedCells[i] && cell.trim().split(/\s+/).length >= 4).length;
  if (sentences * 2 >= cells.length) return null;
  return { rows, total, nextLine: position >= text.length ? lineStarts.length : lineAt(lineStarts, position) };
}

interface CsvRecord {
  fields: string[];
  quoted: boolean[];
  /** Offset just after the record's line break. */
  next: number;
}

/** One record starting at `position`, or null if it is not well-formed CSV. */
function csvRecordAt(text: string, position: number): CsvRecord | null {
  const fields: string[] = [];
  const quoted: boolean[] = [];
  let p = position;
  for (;;) {
    let field = '';
    if (text[p] === '"') {
      p++;
      for (;;) {
        const close = text.indexOf('"', p);
        if (close === -1) return null;
        field += text.slice(p, close);
        if (text[close + 1] === '"') {
          field += '"';
          p = close + 2;
        } else {
          p = close + 1;
          break;
        }
      }
      if (p < text.length && text[p] !== ',' && text[p] !== '\n') return null;
      quoted.push(true);
    } else {
      let end = p;
      while (end < text.length && text[end] !== ',' && text[end] !== '\n') end++;
      field = text.slice(p, end);
      if (field.includes('"')) return null;
      p = end;
      quoted.push(false);
    }
    fields.push(field);
    if (text[p] === ',') {
      p++;
      continue;
    }
    return { fields, quoted, next: p + 1 };
  }
}

/** The first line starting at or after `position` (binary search: the starts are in order). */
function lineAt(lineStarts: number[], position: number): number {
  let [low, high] = [0, lineStarts.length];
  while (low < high) {
    const middle = (low + high) >> 1;
    if (lineStarts[middle]! < position) low = middle + 1;
    else high = middle;
  }
  return low;
}
