/**
 * Borderless tables: runs of consecutive lines split by wide gaps into segments whose columns line up.
 *
 * A line is tabular when a gap between two of its words is at least `gapEms` of its height (word spaces are
 * about a quarter of that, and justified prose rarely stretches them past half). A run of at least `minRows`
 * tabular lines, each no further below the last than `maxLeadingEms` line heights, is a candidate; its columns
 * are the x ranges its segments cover, merged where they overlap, so left-, right- and centre-aligned columns
 * all line up. Guards against prose set in columns, which also has aligned wide gaps:
 *   - at least 3 columns, with short cells (at most `maxWordsPerCell` words on average), or
 *   - exactly 2 columns whose second column is mostly numbers (a label–value list).
 * Every row must fill at least two columns, or the alignment is a coincidence of a few lines.
 */
import type { Box, Table, TableCell } from '../content.js';
import { centreIn } from './ruled-tables.js';
import { linesOf, lineText, type Line, type Word } from './words.js';

const gapEms = 1;
const minRows = 3;
const maxLeadingEms = 2.5;
const maxWordsPerCell = 5;

interface Segment {
  words: Word[];
  start: number;
  end: number;
}

interface Row {
  line: Line;
  segments: Segment[];
}

export function alignedTables(page: number, words: Word[], ruled: Table[]): Table[] {
  // Words inside a ruled table are that table's; a region it covers is not reported twice.
  const free = words.filter((w) => !ruled.some((t) => t.box && centreIn(w, t.box)));
  const tables: Table[] = [];
  let run: Row[] = [];
  const close = () => {
    if (run.length >= minRows) tables.push(...tablesOf(page, run));
    run = [];
  };
  for (const line of linesOf(free)) {
    const segments = segmentsOf(line);
    const previous = run.at(-1)?.line;
    if (previous && line.y - (previous.y + previous.height) > previous.height * maxLeadingEms) close();
    if (segments.length >= 2) run.push({ line, segments });
    else close();
  }
  close();
  return tables;
}

function segmentsOf(line: Line): Segment[] {
  const segments: Segment[] = [];
  for (const word of line.words) {
    const last = segments.at(-1);
    if (last && word.x - last.end < line.height * gapEms) {
      last.words.push(word);
      last.end = Math.max(last.end, word.x + word.width);
    } else segments.push({ words: [word], start: word.x, end: word.x + word.width });
  }
  return segments;
}

/** Column ranges: the union of the rows' segments' x ranges. */
function columnsOf(rows: Row[]): { start: number; end: number }[] {
  const ranges = rows.flatMap((r) => r.segments.map((s) => ({ start: s.start, end: s.end }))).sort((a, b) => a.start - b.start);
  const columns: { start: number; end: number }[] = [];
  for (const range of ranges) {
    const last = columns.at(-1);
    if (last && range.start <= last.end) last.end = Math.max(last.end, range.end);
    else columns.push({ ...range });
  }
  return columns;
}

/**
 * The run as one table if it passes the guards, else the longest stretches of it that do: a run can start
 * with lines that only happen to have wide gaps.
 */
function tablesOf(page: number, run: Row[]): Table[] {
  const table = tableOf(page, run);
  if (table) return [table];
  // Drop the first row and try again: cheap, as runs are short and usually fail on a leading line or two.
  return run.length > minRows ? tablesOf(page, run.slice(1)) : [];
}

function tableOf(page: number, rows: Row[]): Table | null {
  const columns = columnsOf(rows);
  const slots = rows.map((row) =>
    columns.map((column) => row.segments.filter((s) => s.start >= column.start && s.end <= column.end).flatMap((s) => s.words)),
  );
  if (slots.some((row) => row.filter((words) => words.length > 0).length < 2)) return null;
  const filled = slots.flat().filter((words) => words.length > 0);
  const shortCells = filled.reduce((sum, words) => sum + words.length, 0) / filled.length <= maxWordsPerCell;
  const numbers = slots.filter((row) => row[1]!.length > 0 && row[1]!.every((w) => numeric.test(w.text))).length;
  const labelValues = columns.length === 2 && numbers >= rows.length * 0.8;
  if (!((columns.length >= 3 && shortCells) || labelValues)) return null;

  const top = rows.reduce((least, r) => Math.min(least, r.line.y), Infinity);
  const bottom = rows.reduce((most, r) => Math.max(most, r.line.y + r.line.height), -Infinity);
  // Row boundaries halfway between lines, so the cells tile the table.
  const edges = rows.map((r, i) => (i === 0 ? top : (rows[i - 1]!.line.y + rows[i - 1]!.line.height + r.line.y) / 2));
  edges.push(bottom);
  const cells: TableCell[] = [];
  slots.forEach((row, r) =>
    row.forEach((words, c) => {
      const box: Box = {
        x: columns[c]!.start,
        y: edges[r]!,
        width: columns[c]!.end - columns[c]!.start,
        height: edges[r + 1]! - edges[r]!,
      };
      cells.push({ row: r, column: c, row_span: 1, column_span: 1, text: lineText(words), box });
    }),
  );
  const left = columns[0]!.start;
  const box: Box = { x: left, y: top, width: columns.at(-1)!.end - left, height: bottom - top };
  return { page, box, rows: rows.length, columns: columns.length, cells, detection: 'aligned' };
}

const numeric = /^[-+−(]?[$€£¥]?\d[\d,.\s]*%?\)?$|^[-–—]$/;
