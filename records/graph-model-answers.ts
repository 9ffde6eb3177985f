/**
 * What the graph model answered for each passage of a file, kept until the file is deleted so that an extraction
 * that runs again (a retry, a worker lost mid-stage) reads the answers it already paid for instead of asking again.
 * A passage is named by the hash of what the model was shown (its text and the entities listed with it).
 */
import { createHash } from 'node:crypto';
import type { Queryable } from './db.js';

/** A relation as the model stated it, before it is matched to the passage's entities and sentences. */
export interface StatedRelation {
  source: string;
  relation: string;
  target: string;
  evidence: string;
}

export function passageHash(text: string, entities: string[]): string {
  return createHash('sha256')
    .update(JSON.stringify([text, entities]))
    .digest('hex');
}

/** The stored answers among `hashes`, by hash. */
export async function storedAnswers(
  db: Queryable,
  fileId: string,
  model: string,
  hashes: string[],
): Promise<Map<string, StatedRelation[]>> {
  if (hashes.length === 0) return new Map();
  const { rows } = await db.query<{ passage_hash: string; relations: StatedRelation[] }>(
    'SELECT passage_hash, relations FROM graph_model_answers WHERE file_id = $1 AND model = $2 AND passage_hash = ANY($3::text[])',
    [fileId, model, hashes],
  );
  return new Map(rows.map((r) => [r.passage_hash, r.relations]));
}

/** Stores an answer, once; nothing when the file was deleted meanwhile (what the call cost is recorded anyway). */
export async function storeAnswer(tx: Queryable, fileId: string, model: string, hash: string, relations: StatedRelation[]): Promise<void> {
  await tx.query(
    `INSERT INTO graph_model_answers (file_id, passage_hash, model, relations)
     SELECT id, $2, $3, $4::jsonb FROM files WHERE id = $1
     ON CONFLICT DO NOTHING`,
    [fileId, hash, model, JSON.stringify(relations)],
  );
}
