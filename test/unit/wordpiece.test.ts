import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findTool } from '../../cli/tools.js';
import { WordPiece } from '../../models/wordpiece.js';

describe("all-MiniLM-L6-v2's WordPiece tokenizer", () => {
  const tokenizer = new WordPiece(readFileSync(join(findTool('embedding-model'), 'vocab.txt'), 'utf8'));

  it('gives the ids BERT uncased gives: lower case, punctuation split off, [CLS] and [SEP] around', () => {
    assert.deepEqual(tokenizer.encode('Hello, World!', 256), [101, 7592, 1010, 2088, 999, 102]);
  });

  it('cuts an unknown word greedily, longest piece first: una ##ffa ##ble', () => {
    assert.deepEqual(tokenizer.encode('unaffable', 256), [101, 14477, 20961, 3468, 102]);
  });

  it('strips accents, as the uncased model was trained', () => {
    assert.deepEqual(tokenizer.encode('Café', 256), tokenizer.encode('cafe', 256));
  });

  it('stops at the token limit, still ending with [SEP]', () => {
    const ids = tokenizer.encode('word '.repeat(1000), 256);
    assert.equal(ids.length, 256);
    assert.equal(ids.at(-1), tokenizer.sep);
  });
});
