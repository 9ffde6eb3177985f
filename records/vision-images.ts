/** The copy of an image file that vision models are sent, stored by extraction beside the file's pages. */
import type { Queryable } from './db.js';

export interface VisionImageRecord {
  data: Buffer;
  media_type: 'image/png' | 'image/jpeg';
  width: number;
  height: number;
}

/** Stores the file's copy; one a file, so an extraction that runs again keeps the first. */
export async function storeVisionImage(db: Queryable, fileId: string, image: VisionImageRecord): Promise<void> {
  await db.query(
    `INSERT INTO file_vision_images (file_id, media_type, width, height, data) SELECT id, $2, $3, $4, $5 FROM files WHERE id = $1
     ON CONFLICT (file_id) DO NOTHING`,
    [fileId, image.media_type, image.width, image.height, image.data],
  );
}

export async function visionImageOfFile(db: Queryable, fileId: string): Promise<VisionImageRecord | null> {
  const { rows } = await db.query<VisionImageRecord>('SELECT data, media_type, width, height FROM file_vision_images WHERE file_id = $1', [
    fileId,
  ]);
  return rows[0] ?? null;
}
