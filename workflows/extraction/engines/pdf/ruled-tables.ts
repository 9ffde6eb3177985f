/**
 * Tables drawn with rules: connected horizontal and vertical rulings make a grid; a rule missing inside the
 * grid joins the slots on either side into one spanning cell; words fall into the cell holding their centre.
 */
import type { Box, Table, TableCell } from '../content.js';
import type { PageDrawing, Ruling } from './rulings.js';
import { linesOf, lineText, type Word } from './words.js';

/** How far apart, in points, two rulings may be and still be one line, or touch. */
const tolerance = 2;

export function ruledTables(page: number, drawing: PageDrawing, words: Word[]): Table[] {
  const horizontal = merge(drawing.horizontal);
  const vertical = merge(drawing.vertical);
  const tables: Table[] = [];
  for (const group of connectedGroups(horizontal, vertical)) {
    const table = tableOf(page, group.horizontal, group.vertical, words);
    if (table) tables.push(table);
  }
  return tables.sort((a, b) => a.box!.y - b.box!.y || a.box!.x - b.box!.x);
}

/** Joins rulings on the same line whose extents overlap or touch: borders are often drawn cell by cell. */
export function merge(rulings: Ruling[]): Ruling[] {
  const sorted = [...rulings].sort((a, b) => a.position - b.position || a.start - b.start);
  const lines: Ruling[][] = [];
  for (const ruling of sorted) {
    const line = lines.at(-1);
    if (line && ruling.position - line[0]!.position <= tolerance) line.push(ruling);
    else lines.push([ruling]);
  }
  const merged: Ruling[] = [];
  for (const line of lines) {
    const position = line.reduce((sum, r) => sum + r.position, 0) / line.length;
    line.sort((a, b) => a.start - b.start);
    let current: Ruling | undefined;
    for (const { start, end } of line) {
      if (current && start <= current.end + tolerance) current.end = Math.max(current.end, end);
      else merged.push((current = { position, start, end }));
    }
  }
  return merged;
}

const crosses = (h: Ruling, v: Ruling) =>
  v.position >= h.start - tolerance &&
  v.position <= h.end + tolerance &&
  h.position >= v.start - tolerance &&
  h.position <= v.end + tolerance;

/** Rulings that touch, directly or through others (union–find over every crossing pair). */
function connectedGroups(horizontal: Ruling[], vertical: Ruling[]): { horizontal: Ruling[]; vertical: Ruling[] }[] {
  const parent = [...horizontal, ...vertical].map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  horizontal.forEach((h, i) =>
    vertical.forEach((v, j) => {
      if (crosses(h, v)) parent[find(i)] = find(horizontal.length + j);
    }),
  );
  const groups = new Map<number, { horizontal: Ruling[]; vertical: Ruling[] }>();
  const groupOf = (i: number) => groups.get(find(i)) ?? groups.set(find(i), { horizontal: [], vertical: [] }).get(find(i))!;
  horizontal.forEach((h, i) => groupOf(i).horizontal.push(h));
  vertical.forEach((v, j) => groupOf(horizontal.length + j).vertical.push(v));
  return [...groups.values()].filter((g) => g.horizontal.length >= 2 && g.vertical.length >= 2);
}

/** Positions closer than the tolerance are one grid line. */
function gridLines(positions: number[]): number[] {
  const lines: number[] = [];
  for (const p of [...positions].sort((a, b) => a - b)) {
    if (lines.length === 0 || p - lines.at(-1)! > tolerance) lines.push(p);
  }
  return lines;
}

function tableOf(page: number, horizontal: Ruling[], vertical: Ruling[], words: Word[]): Table | null {
  // The outer edges come from the rules' extents too, so a table without side borders still has its columns.
  const xs = gridLines([...vertical.map((v) => v.position), ...horizontal.flatMap((h) => [h.start, h.end])]);
  const ys = gridLines([...horizontal.map((h) => h.position), ...vertical.flatMap((v) => [v.start, v.end])]);
  const rows = ys.length - 1;
  const columns = xs.length - 1;
  // A single framed box is a border around something, not a table.
  if (rows < 1 || columns < 1 || rows * columns < 2) return null;

  const covers = (rulings: Ruling[], position: number, at: number) =>
    rulings.some((r) => Math.abs(r.position - position) <= tolerance && r.start - tolerance <= at && at <= r.end + tolerance);
  // Whether the rule between slot (r, c) and its right or lower neighbour is drawn, judged at the slot's middle.
  const ruledRight = (r: number, c: number) => covers(vertical, xs[c + 1]!, (ys[r]! + ys[r + 1]!) / 2);
  const ruledBelow = (r: number, c: number) => covers(horizontal, ys[r + 1]!, (xs[c]! + xs[c + 1]!) / 2);

  const taken = Array.from({ length: rows }, () => new Array<boolean>(columns).fill(false));
  const cells: TableCell[] = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < columns; c++) {
      if (taken[r]![c]) continue;
      let columnSpan = 1;
      while (c + columnSpan < columns && !ruledRight(r, c + columnSpan - 1) && !taken[r]![c + columnSpan]) columnSpan++;
      let rowSpan = 1;
      const openBelow = (row: number) =>
        Array.from({ length: columnSpan }, (_, k) => c + k).every((col) => !ruledBelow(row, col) && !taken[row + 1]![col]);
      while (r + rowSpan < rows && openBelow(r + rowSpan - 1)) rowSpan++;
      for (let i = r; i < r + rowSpan; i++) for (let j = c; j < c + columnSpan; j++) taken[i]![j] = true;
      const box: Box = { x: xs[c]!, y: ys[r]!, width: xs[c + columnSpan]! - xs[c]!, height: ys[r + rowSpan]! - ys[r]! };
      cells.push({ row: r, column: c, row_span: rowSpan, column_span: columnSpan, text: textIn(box, words), box });
    }
  }
  const box = { x: xs[0]!, y: ys[0]!, width: xs[columns]! - xs[0]!, height: ys[rows]! - ys[0]! };
  return { page, box, rows, columns, cells, detection: 'ruled' };
}

export const centreIn = (word: Word, box: Box) => {
  const x = word.x + word.width / 2;
  const y = word.y + word.height / 2;
  return x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height;
};

/** The words inside a box in reading order, its lines joined by spaces. */
function textIn(box: Box, words: Word[]): string {
  return linesOf(words.filter((w) => centreIn(w, box)))
    .map((line) => lineText(line.words))
    .join(' ');
}
