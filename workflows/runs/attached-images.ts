/**
 * An image attachment as a vision model is sent it: the bounded copy extraction stored, never the upload. A file
 * extracted before such copies were stored gets one made from its upload the first time it is sent, and kept.
 */
import type { Queryable } from '../../records/db.js';
import type { BlobStore } from '../../records/blobs/store.js';
import { findFileById } from '../../records/files.js';
import { storeVisionImage, visionImageOfFile } from '../../records/vision-images.js';
import type { LoadedImage } from '../../models/gateway.js';
import { readImage } from '../extraction/engines/image.js';
import { visionImageInThread } from '../extraction/engines/analysis-thread.js';

export async function attachedImage(db: Queryable, blobs: BlobStore, fileId: string): Promise<LoadedImage> {
  const stored = await visionImageOfFile(db, fileId);
  if (stored) return { data: stored.data, media_type: stored.media_type };
  const file = await findFileById(db, fileId);
  if (!file) throw new Error(`attachment ${fileId} is gone`);
  const made = await visionImageInThread(await readImage(await blobs.get(file.blob_key), () => {}));
  await storeVisionImage(db, fileId, made);
  return { data: made.data, media_type: made.media_type };
}
