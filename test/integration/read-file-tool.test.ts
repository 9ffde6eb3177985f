import assert from 'node:assert/strict';
import { completeExtraction, failExtraction, insertFile, newFileId } from '../../records/files.js';
import { storePages } from '../../records/file-content.js';
import { insertProject } from '../../records/projects.js';
import type { Db } from '../../records/db.js';
import { readFile, readFileSpec, type Attachments } from '../../tools/read-file.js';
import { postgres } from '../support/services.js';

describe('the read_file tool', () => {
  let db: Db;
  let projectId: string;
  let otherProjectId: string;

  before(async () => {
    db = (await postgres()).db;
    projectId = (await insertProject(db, 'read-file')).id;
    otherProjectId = (await insertProject(db, 'read-file-other')).id;
  });

  /** A file in `project` with `pages` extracted (or still processing when `pages` is null). */
  async function file(project: string, filename: string, pages: string[] | null): Promise<string> {
    const id = newFileId();
    await insertFile(db, {
      id,
      projectId: project,
      filename,
      bytes: 10,
      purpose: 'attachment',
      mimeType: 'text/plain',
      blobKey: `test/${id}`,
      metadata: {},
    });
    if (pages) {
      await storePages(
        db,
        id,
        pages.map((text, i) => ({ page: i + 1, text, source: 'plain_text' })),
      );
      assert.equal(await completeExtraction(db, id, []), true);
    }
    return id;
  }

  const attached = (...attachmentIds: string[]): Attachments => ({ db, projectId, attachmentIds });

  it('is offered with the id, name and size of each attached file of the project, and nothing else', async () => {
    const report = await file(projectId, 'report "Q3".txt', ['one', 'two']);
    const pending = await file(projectId, 'pending.txt', null);
    const foreign = await file(otherProjectId, 'foreign.txt', ['secret']);
    const spec = await readFileSpec(attached(report, pending, foreign, 'file_missing'));
    assert.equal(spec.name, 'read_file');
    assert.deepEqual(spec.parameters.required, ['file_id']);
    assert.match(
      spec.description,
      new RegExp(`- ${report}: "report \\\\"Q3\\\\".txt", 2 pages\n- ${pending}: "pending.txt", still being processed`),
    );
    assert.doesNotMatch(spec.description, new RegExp(`${foreign}|foreign|file_missing|${projectId}|test/`));
  });

  it('reads one page, or the whole text with each page marked', async () => {
    const id = await file(projectId, 'minutes.txt', ['Alpha page.', 'Beta page.']);
    assert.deepEqual(await readFile({ file_id: id, page: 2 }, attached(id)), {
      content: `[${id}, page 2 of 2, characters 0–10 of 10]\nBeta page.\n[End of the file.]`,
      is_error: false,
    });
    const first = await readFile({ file_id: id, page: 1 }, attached(id));
    assert.match(first.content, /\nAlpha page\.\n\[End of page 1; page 2 follows\.\]$/);
    const whole = '[page 1]\nAlpha page.\n\n[page 2]\nBeta page.';
    assert.deepEqual(await readFile({ file_id: id }, attached(id)), {
      content: `[${id}, the text, characters 0–${whole.length} of ${whole.length}]\n${whole}\n[End of the file.]`,
      is_error: false,
    });
  });

  it('reads 8,000 characters by default and says how to read on, counting characters rather than bytes', async () => {
    const page = 'ü'.repeat(8_000) + 'tail';
    const id = await file(projectId, 'long.txt', [page]);
    const first = await readFile({ file_id: id, page: 1 }, attached(id));
    assert.equal(first.is_error, false);
    assert.equal(
      first.content,
      `[${id}, page 1 of 1, characters 0–8000 of 8004]\n${'ü'.repeat(8_000)}\n[More follows: call read_file with {"file_id":"${id}","page":1,"offset":8000}]`,
    );
    assert.deepEqual(await readFile({ file_id: id, page: 1, offset: 8_000 }, attached(id)), {
      content: `[${id}, page 1 of 1, characters 8000–8004 of 8004]\ntail\n[End of the file.]`,
      is_error: false,
    });
    const slice = await readFile({ file_id: id, offset: 9, length: 3 }, attached(id));
    assert.match(
      slice.content,
      /^\[file_\w+, the text, characters 9–12 of 8013\]\nüüü\n\[More follows: call read_file with \{"file_id":"file_\w+","offset":12\}\]$/,
    );
  });

  it('answers "no such attachment" for a file of another project, a file not attached, and a file that does not exist', async () => {
    const mine = await file(projectId, 'mine.txt', ['mine']);
    const notAttached = await file(projectId, 'other.txt', ['not for this run']);
    const foreign = await file(otherProjectId, 'foreign.txt', ['secret']);
    for (const fileId of [foreign, notAttached, 'file_doesnotexist']) {
      const result = await readFile({ file_id: fileId }, attached(mine, foreign));
      assert.deepEqual(result, { content: `There is no such attachment: ${fileId}`, is_error: true });
    }
  });

  it('shows the model what it asked wrongly: a missing page, an offset past the end, bad arguments, text not yet extracted', async () => {
    const id = await file(projectId, 'short.txt', ['short']);
    const pending = await file(projectId, 'pending.txt', null);
    const failed = await file(projectId, 'broken.txt', null);
    await failExtraction(db, failed, { code: 'invalid_file', message: 'the file is damaged' });
    const ask = (args: Record<string, unknown>) => readFile(args, attached(id, pending, failed));
    assert.deepEqual(await ask({ file_id: id, page: 3 }), { content: `${id} has 1 page.`, is_error: true });
    assert.deepEqual(await ask({ file_id: id, offset: 50 }), {
      content: 'The offset 50 is past the end of the text, which has 14 characters.',
      is_error: true,
    });
    const bad = await ask({ file_id: id, page: 'two', extra: true });
    assert.equal(bad.is_error, true);
    assert.match(bad.content, /^The arguments do not match the tool's parameters: /);
    assert.deepEqual(await ask({ file_id: pending }), {
      content: `${pending} is still being processed; its text cannot be read yet.`,
      is_error: true,
    });
    assert.deepEqual(await ask({ file_id: failed }), {
      content: `${failed} is unreadable: its text could not be extracted (the file is damaged).`,
      is_error: true,
    });
  });
});
