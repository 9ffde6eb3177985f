/**
 * Sentence embeddings with all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, on this machine: 384 numbers per text,
 * the mean of its token vectors, of unit length, so that a dot product is the cosine similarity. The model and
 * vocabulary are files on disk (scripts/deps installs them); nothing is downloaded.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WordPiece } from './wordpiece.js';

export const EMBEDDING_DIMENSIONS = 384;
/** The model was trained on at most this many tokens; a longer text is read in its first part. */
const MAX_TOKENS = 256;

type Ort = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;

export class TextEmbedder {
  private constructor(
    private readonly ort: Ort,
    private readonly session: Session,
    private readonly tokenizer: WordPiece,
  ) {}

  /** `dir` holds model.onnx and vocab.txt. */
  static async load(dir: string): Promise<TextEmbedder> {
    const ort = (await import('onnxruntime-node')).default as unknown as Ort;
    const session = await ort.InferenceSession.create(join(dir, 'model.onnx'), { intraOpNumThreads: 1, graphOptimizationLevel: 'all' });
    return new TextEmbedder(ort, session, new WordPiece(await readFile(join(dir, 'vocab.txt'), 'utf8')));
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const encoded = texts.map((t) => this.tokenizer.encode(t, MAX_TOKENS));
    const length = Math.max(...encoded.map((ids) => ids.length));
    const ids = new BigInt64Array(texts.length * length);
    const mask = new BigInt64Array(texts.length * length);
    encoded.forEach((row, r) => row.forEach((id, c) => ((ids[r * length + c] = BigInt(id)), (mask[r * length + c] = 1n))));
    const shape = [texts.length, length];
    const output = await this.session.run({
      input_ids: new this.ort.Tensor('int64', ids, shape),
      attention_mask: new this.ort.Tensor('int64', mask, shape),
      token_type_ids: new this.ort.Tensor('int64', new BigInt64Array(texts.length * length), shape),
    });
    const hidden = output.last_hidden_state!.data as Float32Array;
    return encoded.map((row, r) => {
      const vector = new Float32Array(EMBEDDING_DIMENSIONS);
      for (let c = 0; c < row.length; c++) {
        const at = (r * length + c) * EMBEDDING_DIMENSIONS;
        for (let d = 0; d < EMBEDDING_DIMENSIONS; d++) vector[d]! += hidden[at + d]!;
      }
      const norm = Math.hypot(...vector) || 1;
      for (let d = 0; d < EMBEDDING_DIMENSIONS; d++) vector[d]! /= norm;
      return vector;
    });
  }
}

const loaded = new Map<string, Promise<TextEmbedder>>();

/** One embedder per model folder per process, loaded on first use. */
export function embedderAt(dir: string): Promise<TextEmbedder> {
  let embedder = loaded.get(dir);
  if (!embedder) {
    embedder = TextEmbedder.load(dir);
    embedder.catch(() => loaded.delete(dir));
    loaded.set(dir, embedder);
  }
  return embedder;
}

/** A query's embedding, or undefined without a model; a model that fails to load or run throws. */
export async function embedQuery(modelDir: string | undefined, text: string): Promise<Float32Array | undefined> {
  if (!modelDir) return undefined;
  const [vector] = await (await embedderAt(modelDir)).embed([text]);
  return vector;
}
