/**
 * Extraction's I/O, in two stages: `extractFileContent` reads the file's blob and stores its pages (or
 * transcript segments) and tables as it goes; `completeFileExtraction` reads them back, finds the graph items
 * of a context file and commits everything with the status. Both are safe to run again: content rows are
 * written once each, and only a file still `processing` completes, so a retry records `file.processed` once.
 */
import { Context, ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import type { BlobStore } from '../../records/blobs/store.js';
import type { ModelCatalogue } from '../../models/catalogue.js';
import type { ModelGateway } from '../../models/gateway.js';
import { BlobNotFoundError } from '../../records/blobs/store.js';
import { completeExtraction, failExtraction, findFileById, type FileRecord } from '../../records/files.js';
import { ExtractionError } from './engines/errors.js';
import { extractInto } from './content-stage.js';
import { laterStepsBegun } from '../../records/file-content.js';
import { draftGraph, graphItemsOf } from './graph-stage.js';
import { draftedGraphItems } from '../../records/graph-drafts.js';
import { embedParts } from './embedding-stage.js';
import { outlastDatabaseOutage } from '../database-outage.js';
import { keepBeating } from '../heartbeats.js';
import { contextOf, inSpan } from '../../tracing/context.js';
import { DEFAULT_EXTRACTION_SLICE_SECONDS, type FairShareSettings } from '../project-shares.js';

export type ExtractionOutcome = 'processed' | 'failed' | 'skipped';
/** `more`: the slice's time ran out with content left, which the workflow asks for in a new slice. */
export type ContentOutcome = 'extracted' | 'more' | 'failed' | 'skipped';

export interface ExtractionDependencies {
  db: Db;
  blobs: BlobStore;
  models: { catalogue: ModelCatalogue; gateway: ModelGateway; graphModel?: string };
  /** The embedding model's folder: a context file's pages are embedded for search by meaning. */
  embeddingModelDir?: string;
  /** Its `extractionSliceSeconds`: how long a slice of a file's content stage runs; the default when absent. */
  fairShare?: Pick<FairShareSettings, 'extractionSliceSeconds'>;
}

export const createExtractionActivities = ({ db, blobs, models, embeddingModelDir, fairShare }: ExtractionDependencies) => {
  const sliceMs = (fairShare?.extractionSliceSeconds ?? DEFAULT_EXTRACTION_SLICE_SECONDS) * 1000;
  // AGENTPLANE_GRAPH_MODEL: a model that reads relations beside the offline patterns.
  const graphModel = models.graphModel ? { catalogue: models.catalogue, gateway: models.gateway, id: models.graphModel } : undefined;
  /** The file, if it still waits for extraction; a deleted or settled file means there is nothing to do. */
  const pending = async (fileId: string): Promise<FileRecord | null> => {
    const file = await findFileById(db, fileId);
    return file && file.status === 'processing' ? file : null;
  };

  /**
   * Runs a stage on a file still waiting for it, turning a failure no retry can fix into the file's terminal
   * `failed`. A PostgreSQL outage is waited out and the stage run again (it resumes from what it stored).
   */
  const settling = async <T>(fileId: string, stage: string, work: (file: FileRecord) => Promise<T>): Promise<T | 'failed' | 'skipped'> => {
    // A stage that is busy computing still proves it is alive; progress it reports rides on its own heartbeats.
    const beat = keepBeating();
    try {
      return await outlastDatabaseOutage(Context.current(), () => settle(fileId, (file) => traced(file, stage, () => work(file))));
    } finally {
      beat.stop();
    }
  };

  /** A stage as a span of the upload's trace; the file.processed event it may record goes with it. */
  const traced = <T>(file: FileRecord, stage: string, work: () => Promise<T>): Promise<T> =>
    inSpan(
      `extract_file ${stage}`,
      {
        parent: contextOf(file.trace_context),
        attributes: {
          'agentplane.file.id': file.id,
          'agentplane.extraction.stage': stage,
          'agentplane.file.mime_type': file.mime_type,
          'agentplane.file.bytes': file.bytes,
          'agentplane.extraction.attempt': Context.current().info.attempt,
        },
      },
      work,
    );

  const settle = async <T>(fileId: string, work: (file: FileRecord) => Promise<T>): Promise<T | 'failed' | 'skipped'> => {
    const file = await pending(fileId);
    if (!file) return 'skipped';
    try {
      return await work(file);
    } catch (err) {
      if (err instanceof ExtractionError) {
        await failExtraction(db, fileId, { code: err.code, message: err.message });
        return 'failed';
      }
      // Deleted while we worked: nothing left to do.
      if (!(await findFileById(db, fileId))) return 'skipped';
      if (err instanceof BlobNotFoundError) {
        throw ApplicationFailure.nonRetryable(`The file's bytes are missing: ${err.message}`, 'blob_missing');
      }
      throw err;
    }
  };

  /**
   * The content stage, or a slice of it when the workflow asks for slices (`inSlices`): one whose time runs out
   * with work left answers `more`. In slices, a context file's parts are also embedded, and its graph items drafted,
   * after its content, rather than in the last stage, which cannot be sliced. A workflow started before there were
   * slices does not ask, and gets its content whole.
   */
  const extractFileContent = async ({ fileId, inSlices }: { fileId: string; inSlices?: boolean }): Promise<ContentOutcome> =>
    settling(fileId, 'content', async (file) => {
      const context = Context.current();
      const more = (outcome: 'done' | 'more') => outcome === 'more';
      if (!inSlices) {
        await extractInto(file, { db, blobs, context });
        return 'extracted' as const;
      }
      const until = Date.now() + sliceMs;
      if (file.purpose !== 'context') return more(await extractInto(file, { db, blobs, context, until })) ? 'more' : 'extracted';
      // Each step begins only once the one before it is done, and a slice does some of each step it reaches: what
      // the later steps have stored says the earlier ones are done.
      const { embedded, drafted } = await laterStepsBegun(db, fileId);
      if (!embedded && !drafted && more(await extractInto(file, { db, blobs, context, until }))) return 'more';
      if (
        !drafted &&
        embeddingModelDir &&
        more(await traced(file, 'embeddings', () => embedParts(db, fileId, embeddingModelDir, context, until)))
      )
        return 'more';
      return more(await traced(file, 'graph', () => draftGraph(db, file, context, graphModel, until))) ? 'more' : 'extracted';
    });

  const completeFileExtraction = async ({ fileId }: { fileId: string }): Promise<ExtractionOutcome> =>
    settling(fileId, 'complete', async (file) => {
      // Drafted by the content stage's slices, unless the workflow began before there were slices.
      const items =
        file.purpose === 'context'
          ? ((await draftedGraphItems(db, fileId)) ??
            (await traced(file, 'graph', () => graphItemsOf(db, file, Context.current(), graphModel))))
          : [];
      // Embedded already by the content stage's slices, unless the workflow began before there were slices.
      if (file.purpose === 'context' && embeddingModelDir)
        await traced(file, 'embeddings', () => embedParts(db, fileId, embeddingModelDir, Context.current()));
      return (await completeExtraction(db, fileId, items)) ? ('processed' as const) : ('skipped' as const);
    });

  return {
    extractFileContent,
    completeFileExtraction,

    /** The last word when extraction could not finish: the file must never stay `processing`. */
    async markFileFailed({ fileId, message }: { fileId: string; message: string }): Promise<void> {
      await failExtraction(db, fileId, { code: 'extraction_failed', message });
    },
  };
};

export type ExtractionActivities = ReturnType<typeof createExtractionActivities>;
