import assert from 'node:assert/strict';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import type { Page } from 'playwright-core';
import { newTenant, sharedApi, type Tenant, type TestApi } from '../support/api.js';
import { assertAccessible, openConsole, screenshot, signIn, visit, type ConsoleSession } from '../support/browser.js';
import { fruitTable, pageSize, ruledTablePdf } from '../support/pdf-fixtures.js';

const REPORT = 'board-report.pdf';

/** Page 1: the ruled fruit table; page 2: prose naming people, organisations and places. */
async function boardReportPdf(): Promise<Buffer> {
  const doc = await PDFDocument.load(await ruledTablePdf(fruitTable, 'stroked'));
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage([pageSize.width, pageSize.height]);
  const lines = [
    'Maria Lopez, CEO of Acme Corporation, met the auditors in Berlin.',
    'Acme Corporation acquired Globex Ltd for $1.2 million.',
  ];
  lines.forEach((line, i) => page.drawText(line, { x: 72, y: pageSize.height - 100 - i * 18, size: 11, font }));
  return Buffer.from(await doc.save());
}

/** Slows the page's uploads so that their progress can be seen. */
async function throttleUploads(page: Page, bytesPerSecond: number): Promise<() => Promise<void>> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: bytesPerSecond,
  });
  return async () => {
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await cdp.detach();
  };
}

describe('console: files and the context graph', function () {
  this.timeout(180_000);
  let api: TestApi;
  let tenant: Tenant;
  let session: ConsoleSession;
  let report: Buffer;

  before(async () => {
    api = await sharedApi();
    tenant = await newTenant(api, 'console-files');
    report = await boardReportPdf();
    session = await openConsole(api.url);
    await signIn(session.page, tenant.admin.key!);
  });

  after(async () => session?.close());

  it('shows an empty list with the curl upload, then uploads a PDF through the drop zone and follows it to processed without reloading', async () => {
    const { page } = session;
    await visit(session, '/files');
    await page.getByRole('heading', { level: 1, name: 'Files' }).waitFor();
    const empty = page.getByRole('region', { name: 'No files yet' });
    await empty.getByText(/curl -X POST .*\/v1\/files/).waitFor();
    assert.match((await empty.textContent()) ?? '', /-F 'file=@report\.pdf'/);
    await assertAccessible(page, 'the empty files list');
    await screenshot(page, 'files-empty');

    let navigations = 0;
    page.on('framenavigated', (frame) => frame === page.mainFrame() && navigations++);
    const restore = await throttleUploads(page, Math.ceil(report.length / 3));
    await page.getByLabel('Purpose').selectOption('context');
    await page.getByLabel('Choose files or drop them here').setInputFiles({ name: REPORT, mimeType: 'application/pdf', buffer: report });
    await page.getByRole('progressbar', { name: `Upload of ${REPORT}` }).waitFor();
    await page.getByText(/uploaded as file_/).waitFor();
    await restore();

    const row = page.getByRole('row', { name: new RegExp(REPORT.replace('.', '\\.')) });
    await row.getByText('processed', { exact: true }).waitFor({ timeout: 60_000 });
    assert.match((await row.textContent()) ?? '', /context.*application\/pdf/);
    assert.equal(navigations, 0, 'the list followed the file without a reload');
    await assertAccessible(page, 'the files list');
    await screenshot(page, 'files-list');
  });

  it("shows the API's refusal of a file whose declared type its content contradicts", async () => {
    const { page } = session;
    await page
      .getByLabel('Choose files or drop them here')
      .setInputFiles({ name: 'not-really.pdf', mimeType: 'application/pdf', buffer: Buffer.from('plain words, not a PDF') });
    const refusal = page.getByRole('alert').filter({ hasText: 'Refused' });
    await refusal.waitFor();
    assert.match((await refusal.textContent()) ?? '', /Refused: The part is declared as application\/pdf but its content is text\/plain\./);
    assert.equal(await page.getByRole('row', { name: /not-really\.pdf/ }).count(), 0, 'nothing was stored');
  });

  it('uploads a file dropped on the drop zone, with the purpose chosen', async () => {
    const { page } = session;
    await page.getByLabel('Purpose').selectOption('attachment');
    // What a browser hands the drop handler when a file is dragged in from the desktop (run in the page).
    const dropped = await page.evaluateHandle(`(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['Minutes of the meeting.'], 'dropped-minutes.txt', { type: 'text/plain' }));
      return transfer;
    })()`);
    await page.getByRole('group', { name: 'Drop zone for uploads' }).dispatchEvent('drop', { dataTransfer: dropped });
    const row = page.getByRole('row', { name: /dropped-minutes\.txt/ });
    await row.getByText('processed', { exact: true }).waitFor({ timeout: 60_000 });
    assert.match((await row.textContent()) ?? '', /attachment.*text\/plain/);
    await page.getByLabel('Purpose').selectOption('context');
  });

  it('opens the file and shows its table as a table, its pages and its graph items', async () => {
    const { page } = session;
    await page.getByRole('link', { name: REPORT }).click();
    await page.getByRole('heading', { level: 1, name: REPORT }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Status: processed' }).waitFor();

    const table = page.getByRole('table', { name: /Table 1 · page 1/ });
    await table.getByRole('columnheader', { name: 'Quantity' }).waitFor();
    const apples = table.getByRole('row', { name: /Apples/ });
    assert.deepEqual(await apples.getByRole('cell').allTextContents(), ['Apples', '3', '1.20']);

    await page.getByRole('article', { name: 'Text of page 1' }).getByText('Quarterly fruit order').waitFor();
    await page.getByRole('link', { name: 'Page 2 →' }).click();
    await page
      .getByRole('article', { name: 'Text of page 2' })
      .getByText(/Maria Lopez, CEO of Acme Corporation/)
      .waitFor();
    assert.match(page.url(), /\?page=2$/);

    const graphItems = page.getByRole('region', { name: 'Graph items' });
    const counted = /([\d,]+) graph items/.exec((await graphItems.textContent()) ?? '');
    assert.ok(counted && Number(counted[1]!.replace(/,/g, '')) > 0, 'graph items were extracted');
    await graphItems.getByRole('link', { name: /Acme Corporation/ }).waitFor();
    await assertAccessible(page, 'the file view');
    await screenshot(page, 'file-detail');
  });

  it('finds an entity of the PDF in the graph, shows its provenance and neighbourhood, and leads back to the file', async () => {
    const { page } = session;
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Graph' }).click();
    await page.getByRole('heading', { level: 1, name: 'Graph' }).waitFor();
    await page.getByLabel('Search entities and passages').fill('Acme');
    await page.getByRole('button', { name: 'Search' }).click();
    const entities = page.getByRole('region', { name: 'Entities' });
    const acme = entities.getByRole('link', { name: /^Acme/ });
    await acme.waitFor();
    assert.match(page.url(), /\/graph\?q=Acme$/);
    await page.getByRole('region', { name: 'Passages' }).getByRole('link', { name: REPORT }).first().waitFor();
    await assertAccessible(page, 'graph search');
    await screenshot(page, 'graph-search');

    await acme.click();
    await page.getByRole('heading', { level: 1, name: /Acme/ }).waitFor();
    const relations = page.getByRole('table', { name: 'Relations' });
    await relations.getByRole('link', { name: /Globex/ }).waitFor();
    const drawing = page.getByRole('img', { name: /Drawing of the neighbourhood of Acme/ });
    await drawing.locator('canvas').first().waitFor();
    const mentions = page.getByRole('table', { name: 'Mentions' });
    const mention = mentions.getByRole('row').filter({ hasText: 'page 2' }).first();
    await mention.waitFor();
    assert.match((await mention.textContent()) ?? '', /Acme Corporation/);
    assert.match((await mention.textContent()) ?? '', /\d+–\d+/, 'the character offsets');
    await assertAccessible(page, 'a graph node');
    await screenshot(page, 'graph-node');

    await page.getByRole('button', { name: 'Dark mode' }).click();
    await page.locator('html[data-theme="dark"]').waitFor({ state: 'attached' });
    await assertAccessible(page, 'a graph node in dark mode');
    await screenshot(page, 'graph-node-dark');
    await page.getByRole('button', { name: 'Dark mode' }).click();

    await mention.getByRole('link', { name: REPORT }).click();
    await page.getByRole('heading', { level: 1, name: REPORT }).waitFor();
    await page.getByText('Page 2 of 2').waitFor();
  });

  it('deletes the file after saying how many graph items go, and shows how many did', async () => {
    const { page } = session;
    await page.getByRole('button', { name: 'Delete this file' }).click();
    const confirm = page.getByRole('alertdialog', { name: `Delete ${REPORT}?` });
    const promised = /and ([\d,]+) graph items extracted from it/.exec((await confirm.textContent()) ?? '');
    assert.ok(promised, 'the confirmation says how many graph items will go');
    await confirm.getByRole('button', { name: `Delete the file and ${promised[1]} graph items` }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `${promised[1]} graph items removed` })
      .waitFor();

    await page.getByRole('link', { name: 'Back to the files' }).click();
    await page.getByRole('row', { name: /dropped-minutes\.txt/ }).waitFor();
    assert.equal(
      await page.getByRole('row', { name: new RegExp(REPORT.replace('.', '\\.')) }).count(),
      0,
      'the deleted file is gone from the list',
    );
    await visit(session, '/graph?q=Acme');
    await page.getByRole('heading', { name: /Nothing matches/ }).waitFor();
  });
});
