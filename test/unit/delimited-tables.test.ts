import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import {
  findDelimitedTables,
  MAX_CELLS_PER_FILE,
  MAX_TABLE_ROWS,
  MAX_TABLE_TEXT_CHARACTERS,
  MAX_TABLES_PER_FILE,
  textTables,
} from '../../workflows/extraction/engines/delimited-tables.js';
import { extractText } from '../../workflows/extraction/engines/text.js';
import { longestStall } from '../support/stalls.js';
import type { Table } from '../../workflows/extraction/engines/content.js';

/** The table's cell texts, row by row. */
const grid = (table: Table) =>
  Array.from({ length: table.rows }, (_, r) => table.cells.filter((cell) => cell.row === r).map((cell) => cell.text));

describe('delimited tables in text', () => {
  it('keeps the first 1,000 rows of a long CSV, says it is truncated, and goes on to the tables after it', () => {
    const csv = ['id,value', ...Array.from({ length: 2_500 }, (_, i) => `${i},${i * 2}`)].join('\n');
    const tables = findDelimitedTables(`${csv}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n`, 1);
    assert.equal(tables.length, 2);
    assert.deepEqual([tables[0]!.rows, tables[0]!.columns, tables[0]!.truncated, tables[0]!.cells.length], [1_000, 2, true, 2_000]);
    assert.deepEqual(grid(tables[0]!).at(-1), ['998', '1996']);
    assert.deepEqual(grid(tables[1]!), [
      ['a', 'b'],
      ['1', '2'],
    ]);
    assert.equal(tables[1]!.truncated, false);
  });

  it('keeps at most 50,000 cells of a wide table', () => {
    const row = (r: number) => Array.from({ length: 100 }, (_, c) => `${r}.${c}`).join('\t');
    const [table] = findDelimitedTables(Array.from({ length: 800 }, (_, r) => row(r)).join('\n'), 1);
    assert.deepEqual([table!.rows, table!.columns, table!.truncated], [500, 100, true]);
  });

  it('reads a CSV block with quoted commas, doubled quotes and a newline inside quotes', () => {
    const text = 'name,note,qty\r\n"Smith, J.","said ""hi""\nthen left",3\r\nDoe,plain,4\r\n';
    const tables = findDelimitedTables(text, 2);
    assert.equal(tables.length, 1);
    const [table] = tables as [Table];
    assert.deepEqual(
      { page: table.page, box: table.box, rows: table.rows, columns: table.columns, detection: table.detection },
      { page: 2, box: null, rows: 3, columns: 3, detection: 'delimited' },
    );
    assert.deepEqual(grid(table), [
      ['name', 'note', 'qty'],
      ['Smith, J.', 'said "hi"\nthen left', '3'],
      ['Doe', 'plain', '4'],
    ]);
    assert.deepEqual(table.cells[4], { row: 1, column: 1, row_span: 1, column_span: 1, text: 'said "hi"\nthen left', box: null });
  });

  it('finds a CSV paragraph between prose paragraphs', () => {
    const text = 'Prices, as agreed, are below.\n\nitem,price\napple,1.20\npear,0.80\n\nThat is all, thank you.';
    assert.deepEqual(findDelimitedTables(text, 1).map(grid), [
      [
        ['item', 'price'],
        ['apple', '1.20'],
        ['pear', '0.80'],
      ],
    ]);
  });

  it('reads a TSV run, even right under a caption line', () => {
    const text = 'Stock on hand\ncode\tname\tcount\nA1\tbolts\t40\nB2\tnuts, small\t7\n';
    assert.deepEqual(findDelimitedTables(text, 1).map(grid), [
      [
        ['code', 'name', 'count'],
        ['A1', 'bolts', '40'],
        ['B2', 'nuts, small', '7'],
      ],
    ]);
  });

  it('reads a Markdown table with an alignment row and an escaped pipe, padding short rows', () => {
    const text = 'Before\n\n| Left | Centre | Right |\n|:-----|:------:|------:|\n| a \\| b | c | d |\n| e | f |\n\nAfter';
    const tables = findDelimitedTables(text, 1);
    assert.equal(tables.length, 1);
    assert.equal(tables[0]!.columns, 3);
    assert.deepEqual(grid(tables[0]!), [
      ['Left', 'Centre', 'Right'],
      ['a | b', 'c', 'd'],
      ['e', 'f', ''],
    ]);
  });

  it('reads a Markdown table without outer pipes', () => {
    const text = 'a | b\n--- | ---\n1 | 2';
    assert.deepEqual(findDelimitedTables(text, 1).map(grid), [
      [
        ['a', 'b'],
        ['1', '2'],
      ],
    ]);
  });

  it('finds no table in a sentence with commas', () => {
    assert.deepEqual(findDelimitedTables('Hello, world. We went to Paris, then Rome, then home.', 1), []);
  });

  it('finds no table in consecutive lines of prose with the same number of commas', () => {
    const text = 'I went to Paris, then to Rome and then home again.\nShe came home late, then slept for a very long time.\n';
    assert.deepEqual(findDelimitedTables(text, 1), []);
  });

  it('finds no CSV table when a paragraph mixes record shapes', () => {
    const text = 'a,b,c\n1,2,3\nthis line, has two fields\n';
    assert.deepEqual(findDelimitedTables(text, 1), []);
  });

  it('finds no table in one CSV line, an unterminated quote, or a bare line of dashes', () => {
    assert.deepEqual(findDelimitedTables('a,b,c', 1), []);
    assert.deepEqual(findDelimitedTables('a,"b,c\n1,2,3', 1), []);
    assert.deepEqual(findDelimitedTables('Heading\n---\ntext', 1), []);
  });

  it('finds the tables of every page of a text file', async () => {
    const body = Readable.from([Buffer.from('x,y\n1,2\fno tables here\f| h |\n|---|\n| v |\n')]);
    const result = await extractText(body, () => {});
    assert.deepEqual(result.pages, ['x,y\n1,2', 'no tables here', '| h |\n|---|\n| v |\n']);
    assert.deepEqual(
      result.tables.map((table) => [table.page, grid(table)]),
      [
        [
          1,
          [
            ['x', 'y'],
            ['1', '2'],
          ],
        ],
        [3, [['h'], ['v']]],
      ],
    );
  });

  it('reads a text file’s first 20 million characters for tables, ending a table there, and no more', () => {
    // The table's first two rows end before the 20,000,000th character, its third after it.
    const before = 'word\n'.repeat(3_999_998) + '\n';
    assert.equal(MAX_TABLE_TEXT_CHARACTERS - before.length, 9);
    const tables = textTables([before + 'a,b\n1,2\n3,4\n', 'x,y\n5,6\n']);
    assert.deepEqual(
      tables.map((table) => [table.page, grid(table)]),
      [
        [
          1,
          [
            ['a', 'b'],
            ['1', '2'],
          ],
        ],
      ],
    );
  });

  it(`keeps a text file’s first ${MAX_TABLES_PER_FILE.toLocaleString('en')} tables, and no more`, () => {
    // 21 pages of 500 two-row CSV paragraphs: 10,500 tables in 94 KB.
    const page = 'a,b\n1,2\n\n'.repeat(500);
    const tables = textTables(Array<string>(21).fill(page));
    assert.equal(tables.length, MAX_TABLES_PER_FILE);
    assert.deepEqual([tables.at(-1)!.page, tables.at(-1)!.cells.length], [20, 4]);
  });

  it(`keeps tables until a text file’s tables hold ${MAX_CELLS_PER_FILE.toLocaleString('en')} cells, and no more`, () => {
    // 21 pages of one CSV of 1,000 rows of 50 fields: 50,000 cells each.
    const page = Array<string>(1_000).fill(Array<string>(50).fill('1').join(',')).join('\n');
    const tables = textTables(Array<string>(21).fill(page));
    assert.deepEqual([tables.length, tables.reduce((cells, table) => cells + table.cells.length, 0)], [20, MAX_CELLS_PER_FILE]);
  });

  it('reads the tables of 20 MB of Markdown in a thread that leaves this one free', async () => {
    // Markdown rows are the slowest text to read for tables: 1.5 s of this thread before. In the 64 KB chunks a
    // blob is read in.
    const data = Buffer.from('| h1 | h2 | h3 |\n|---|---|---|\n' + '| a | b | c |\n'.repeat(1_428_000));
    const chunks = Array.from({ length: Math.ceil(data.length / 65_536) }, (_, i) => data.subarray(i * 65_536, (i + 1) * 65_536));
    const { stalledMs, settled } = await longestStall(() => extractText(Readable.from(chunks), () => {}));
    assert.equal(settled.status, 'fulfilled');
    const { pages, tables } = (settled as PromiseFulfilledResult<Awaited<ReturnType<typeof extractText>>>).value;
    // The table is on the first of its 20 pages of a million characters; the pages after it hold rows without a header.
    assert.equal(pages.length, 20);
    assert.deepEqual(
      tables.map((table) => [table.page, table.rows, table.truncated]),
      [[1, MAX_TABLE_ROWS, true]],
    );
    assert.ok(stalledMs < 1_000, `this thread's timers waited ${stalledMs} ms`);
  });
});
