import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ModelCallError } from '../../models/call-error.js';
import { COST_LIMIT_REACHED, FINAL_MODEL_FAILURES, MODEL_CALL_ERROR_KINDS, MODEL_NOT_FOUND } from '../../models/failure-kinds.js';
import { modelCallFailure } from '../../workflows/model-failure.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

describe('the failures that end a model step', () => {
  it('are the model call errors trying again cannot help with, a model missing from the catalogue, and a call a cost cap has no room for', () => {
    const final = MODEL_CALL_ERROR_KINDS.filter((kind) => kind !== 'cancelled' && !new ModelCallError(kind, 'failed').retryable);
    assert.deepEqual([...FINAL_MODEL_FAILURES].sort(), [...final, MODEL_NOT_FOUND, COST_LIMIT_REACHED].sort());
  });

  it('reach the workflows as final activity failures typed with their kind; the others are retried when the provider asked', () => {
    for (const kind of MODEL_CALL_ERROR_KINDS) {
      const failure = modelCallFailure(new ModelCallError(kind, `the call failed: ${kind}`, { retryAfterMs: 3_000 }));
      assert.equal(failure.type, kind);
      assert.equal(failure.message, `the call failed: ${kind}`);
      assert.equal(failure.nonRetryable, !new ModelCallError(kind, '').retryable, kind);
      if (!failure.nonRetryable) assert.equal(failure.nextRetryDelay, 3_000);
    }
  });

  it('are the one list every workflow retry policy reads', async () => {
    const entries = await readdir(join(root, 'workflows'), { withFileTypes: true, recursive: true });
    const breaches: string[] = [];
    for (const entry of entries.filter((e) => e.isFile() && e.name.endsWith('.ts'))) {
      const file = join(entry.parentPath, entry.name);
      for (const [, listed] of (await readFile(file, 'utf8')).matchAll(/nonRetryableErrorTypes:\s*\[([^\]]*)\]/g)) {
        if (MODEL_CALL_ERROR_KINDS.some((kind) => listed!.includes(`'${kind}'`)) || listed!.includes(MODEL_NOT_FOUND))
          breaches.push(`${relative(root, file)}: [${listed}]`);
      }
    }
    assert.deepEqual(breaches, []);
  });
});
