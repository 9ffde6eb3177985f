/**
 * PDFs for the extraction tests, made with pdf-lib so every word and rule is where the test says. Positions are
 * given in PDF points from the page's top-left, as the engine reports them; pdf-lib's own origin is bottom-left.
 */
import { GlobalFonts, createCanvas } from '@napi-rs/canvas';
import { PDFDocument, PDFHexString, PDFName, PDFNumber, PDFPage, StandardFonts, rgb, type PDFFont } from 'pdf-lib';

export const pageSize = { width: 612, height: 792 } as const;

/** A table's grid: the x of each column edge and the y (from the top) of each row edge. */
export interface Grid {
  xs: number[];
  ys: number[];
  /** Row-major cell texts; null where a spanning cell already covers the slot. */
  cells: (string | null)[][];
}

/** Three columns, a header and two rows: the table every ruled fixture draws. */
export const fruitTable: Grid = {
  xs: [72, 222, 372, 522],
  ys: [100, 124, 148, 172],
  cells: [
    ['Item', 'Quantity', 'Price'],
    ['Apples', '3', '1.20'],
    ['Pears', '12', '0.80'],
  ],
};

/** As `fruitTable`, but its header is one cell over the first two columns: the rule between them stops below it. */
export const spanningTable: Grid = {
  ...fruitTable,
  cells: [
    ['Fruit and count', null, 'Price'],
    ['Apples', '3', '1.20'],
    ['Pears', '12', '0.80'],
  ],
};

async function newDocument(): Promise<{ doc: PDFDocument; font: PDFFont }> {
  const doc = await PDFDocument.create();
  return { doc, font: await doc.embedFont(StandardFonts.Helvetica) };
}

/** Writes text with its top-left corner near (x, top), in top-left coordinates. */
function write(page: PDFPage, font: PDFFont, text: string, x: number, top: number, size = 10): void {
  page.drawText(text, { x, y: pageSize.height - top - size * 0.8, size, font });
}

/**
 * Pages of a PDF long enough that a worker killed, or a database stopped, once its first pages are stored
 * catches it mid-document: three batches of PDF_BATCH_PAGES (64, workflows/extraction/pdf-stage.ts), then their
 * embeddings. A literal, so that the tests using these fixtures do not load the extraction engines.
 */
export const LONG_PDF_PAGES = 192;

/** Pages whose text is `Page N line L: …`, so a test can check each word landed on its page. */
export async function textPdf(pageCount: number, linesPerPage = 40): Promise<Uint8Array> {
  const { doc, font } = await newDocument();
  for (let p = 1; p <= pageCount; p++) {
    const page = doc.addPage([pageSize.width, pageSize.height]);
    for (let l = 1; l <= linesPerPage; l++) {
      write(page, font, `Page ${p} line ${l}: the quick brown fox jumps over the lazy dog`, 72, 60 + (l - 1) * 16);
    }
  }
  return doc.save();
}

/**
 * A grid drawn as rules, with a header spanning where `cells` has nulls (the rule inside the span is left out).
 * `stroked` draws each rule as a line; `filled` as a 0.5 pt filled rectangle, as Chrome and Word do.
 */
export async function ruledTablePdf(grid: Grid, style: 'stroked' | 'filled'): Promise<Uint8Array> {
  const { doc, font } = await newDocument();
  const page = doc.addPage([pageSize.width, pageSize.height]);
  write(page, font, 'Quarterly fruit order', 72, 60, 14);
  const { xs, ys, cells } = grid;
  const rule = (x1: number, y1: number, x2: number, y2: number) => {
    if (style === 'stroked') {
      page.drawLine({
        start: { x: x1, y: pageSize.height - y1 },
        end: { x: x2, y: pageSize.height - y2 },
        thickness: 0.75,
        color: rgb(0, 0, 0),
      });
    } else {
      const horizontal = y1 === y2;
      page.drawRectangle({
        x: horizontal ? x1 : x1 - 0.25,
        y: pageSize.height - (horizontal ? y1 + 0.25 : y2),
        width: horizontal ? x2 - x1 : 0.5,
        height: horizontal ? 0.5 : y2 - y1,
        color: rgb(0, 0, 0),
        borderWidth: 0,
      });
    }
  };
  for (const y of ys) rule(xs[0]!, y, xs.at(-1)!, y);
  // Vertical rules row by row, so one can be left out inside a spanning cell.
  for (let r = 0; r < ys.length - 1; r++) {
    for (let c = 0; c < xs.length; c++) {
      const inside = c > 0 && c < xs.length - 1 && cells[r]![c] === null;
      if (!inside) rule(xs[c]!, ys[r]!, xs[c]!, ys[r + 1]!);
    }
  }
  cells.forEach((row, r) => row.forEach((text, c) => text !== null && write(page, font, text, xs[c]! + 6, ys[r]! + 7)));
  write(page, font, 'Prices are per kilogram and include delivery.', 72, ys.at(-1)! + 30);
  return doc.save();
}

/** A borderless table (4 rows × 3 columns of aligned text) between two paragraphs. */
export const borderlessTable = {
  xs: [72, 250, 430],
  top: 140,
  rowHeight: 16,
  cells: [
    ['Region', 'Manager', 'Sales'],
    ['North', 'Ana Ruiz', '1,204'],
    ['South', 'Bo Chen', '980'],
    ['East', 'Cy Park', '2,310'],
  ],
};

export async function borderlessTablePdf(): Promise<Uint8Array> {
  const { doc, font } = await newDocument();
  const page = doc.addPage([pageSize.width, pageSize.height]);
  write(page, font, 'Sales by region for the second quarter, as reported by each office.', 72, 100);
  const { xs, top, rowHeight, cells } = borderlessTable;
  cells.forEach((row, r) => row.forEach((text, c) => write(page, font, text, xs[c]!, top + r * rowHeight)));
  write(page, font, 'The East office opened in March and already leads the company.', 72, top + cells.length * rowHeight + 30);
  return doc.save();
}

const prose = [
  'The committee met on Tuesday to discuss the budget for the coming year and agreed',
  'that the library would receive more money for books and for longer opening hours',
  'while the sports hall would have its roof repaired before the winter arrives here',
  'and several members asked that the minutes be published on the town website soon',
];

/** Two columns of running prose: wide aligned gaps, but not a table. */
export async function twoColumnProsePdf(): Promise<Uint8Array> {
  const { doc, font } = await newDocument();
  const page = doc.addPage([pageSize.width, pageSize.height]);
  const words = prose.join(' ').split(' ');
  // About seven words a line in each 220 pt column, 24 lines per column.
  for (const [column, x] of [72, 320].entries()) {
    for (let l = 0; l < 24; l++) {
      const start = ((column * 24 + l) * 7) % (words.length - 7);
      write(page, font, words.slice(start, start + 7).join(' '), x, 72 + l * 14);
    }
  }
  return doc.save();
}

/** Words a scanned page shows, painted as an image with no text layer. */
export const scannedWords = 'SCANNED INVOICE 4217';

/** Page 1 has text; page 2 is only an image of text, as a scanner makes; page 3 is blank. */
export async function scannedPdf(): Promise<Uint8Array> {
  const { doc, font } = await newDocument();
  write(doc.addPage([pageSize.width, pageSize.height]), font, 'A cover page with real text', 72, 72);
  await addScan(doc, scannedWords);
  doc.addPage([pageSize.width, pageSize.height]);
  return doc.save();
}

/** `pages` scanned pages, page k showing only an image of the words `SCANNED PAGE k`: OCR reads each. */
export async function scannedPagesPdf(pages: number): Promise<Uint8Array> {
  const { doc } = await newDocument();
  for (let k = 1; k <= pages; k++) await addScan(doc, `SCANNED PAGE ${k}`);
  return doc.save();
}

/** A page that is only an image (150 dpi) of `words` in large type, as a scanner makes. */
async function addScan(doc: PDFDocument, words: string): Promise<void> {
  GlobalFonts.registerFromPath('/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', 'DejaVu Sans');
  const canvas = createCanvas(1275, 1650);
  const context = canvas.getContext('2d');
  context.fillStyle = '#ffffff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.fillStyle = '#000000';
  context.font = '72px "DejaVu Sans"';
  context.fillText(words, 100, 300);
  const image = await doc.embedPng(await canvas.encode('png'));
  doc.addPage([pageSize.width, pageSize.height]).drawImage(image, { x: 0, y: 0, width: pageSize.width, height: pageSize.height });
}

/**
 * One page whose content stream shows the word `a` `words` times at one spot, the stream compressed: a million
 * words are 28 MB of drawing in about 60 KB of file, the way a hostile document inflates to far more than it is.
 */
export async function inflatingPdf(words: number): Promise<Uint8Array> {
  const { doc, font } = await newDocument();
  const page = doc.addPage([pageSize.width, pageSize.height]);
  page.node.setFontDictionary(PDFName.of('F1'), font.ref);
  const drawing = 'BT /F1 10 Tf\n' + '1 0 0 1 72 720 Tm (a) Tj\n'.repeat(words) + 'ET\n';
  page.node.set(PDFName.of('Contents'), doc.context.register(doc.context.flateStream(drawing)));
  return doc.save();
}

/** One page of `points` × `points` PDF points (at most 14,400, 200 inches) that is a scan: only an image. */
export async function largeScanPdf(points: number): Promise<Uint8Array> {
  const canvas = createCanvas(200, 200);
  const context = canvas.getContext('2d');
  context.fillStyle = '#ffffff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  const { doc } = await newDocument();
  const image = await doc.embedPng(await canvas.encode('png'));
  doc.addPage([points, points]).drawImage(image, { x: 0, y: 0, width: points, height: points });
  return doc.save();
}

/**
 * A PDF encrypted with the standard handler (RC4, revision 2) whose user password is not empty: its /U entry
 * matches no key derived from the empty password, so a reader must ask for one. pdf-lib cannot encrypt; it can
 * write the /Encrypt dictionary, which is all a reader checks before asking.
 */
export async function encryptedPdf(): Promise<Uint8Array> {
  const { doc, font } = await newDocument();
  write(doc.addPage([pageSize.width, pageSize.height]), font, 'Secret', 72, 72);
  const bytes = (seed: number) =>
    PDFHexString.of(Array.from({ length: 32 }, (_, i) => ((seed + i * 37) % 256).toString(16).padStart(2, '0')).join(''));
  const encrypt = doc.context.obj({ Filter: 'Standard', V: 1, R: 2, Length: 40, P: PDFNumber.of(-44), O: bytes(11), U: bytes(97) });
  doc.context.trailerInfo.Encrypt = doc.context.register(encrypt);
  const id = PDFHexString.of('0123456789abcdef0123456789abcdef');
  doc.context.trailerInfo.ID = doc.context.obj([id, id]);
  return doc.save({ useObjectStreams: false });
}

/** Bytes that are no PDF at all. */
export const garbage = Buffer.from('%PDF-1.7\nthis is not really a PDF, only its first line is\n'.repeat(20));
