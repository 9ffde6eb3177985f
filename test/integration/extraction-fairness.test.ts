/**
 * Extraction among projects: a worker runs a few extraction stages at once, and a project that uploads many
 * files at once makes a backlog in front of them. Each project's files wait behind that project's own, not
 * behind another's: Temporal's matching service, as `agentplane dev` runs it, dispatches the stages to projects
 * in turn (their fairness key is the project).
 */
import assert from 'node:assert/strict';
import type { Stoppable } from '../../cli/processes.js';
import { serveWorker } from '../../cli/worker-process.js';
import type { BlobStore } from '../../records/blobs/store.js';
import { extractionWorkflowId } from '../../workflows/extraction/client.js';
import { newTenant, startTestApi, workflowBundle, type Tenant, type TestApi } from '../support/api.js';
import { eventually } from '../support/eventually.js';
import { isolatedNamespace } from '../support/services.js';

describe('extraction among projects', () => {
  const namespace = 'extraction-fairness';
  let api: TestApi;
  let worker: Stoppable | undefined;

  before(async function () {
    this.timeout(120_000);
    api = await startTestApi({ namespace: await isolatedNamespace(namespace), worker: false });
  });

  after(async () => {
    await worker?.stop();
    await api?.stop();
  });

  /** Whether the file's extraction has a stage scheduled or under way. */
  const stageScheduled = async (fileId: string) => {
    const { raw } = await api.services.temporal.workflow.getHandle(extractionWorkflowId(fileId)).describe();
    return (raw.pendingActivities?.length ?? 0) > 0;
  };

  const upload = async (tenant: Tenant, name: string) => {
    const uploaded = await tenant.admin.upload({
      file: { data: Buffer.from(`notes of ${name}`), filename: `${name}.txt` },
      purpose: 'attachment',
    });
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    return uploaded.body.id as string;
  };

  it("processes other projects' files next, while one project's 30 uploaded before them wait", async function () {
    this.timeout(180_000);
    // The worker runs one stage at a time, and its first one waits here for its file's bytes: the stages of the
    // files uploaded after it wait in Temporal's queue, in the order they were uploaded.
    let openBlobs!: () => void;
    const blobsOpen = new Promise<void>((resolve) => (openBlobs = resolve));
    const blobs = api.services.blobs;
    const heldBlobs: BlobStore = Object.assign(Object.create(blobs) as BlobStore, {
      get: async (key: string) => (await blobsOpen, blobs.get(key)),
    });
    worker = await serveWorker({ ...api.services, blobs: heldBlobs }, api.temporalAddress, namespace, await workflowBundle(), undefined, 1);

    const busy = await newTenant(api, 'busy uploader');
    const busyFiles: string[] = [];
    for (let i = 0; i < 30; i++) busyFiles.push(await upload(busy, `busy-${i}`));
    await eventually(async () => {
      for (const id of busyFiles) assert.ok(await stageScheduled(id), `${id} has no stage scheduled yet`);
    });
    const others: { tenant: Tenant; file: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const tenant = await newTenant(api, `uploader ${i}`);
      others.push({ tenant, file: await upload(tenant, `one-${i}`) });
    }
    await eventually(async () => {
      for (const { file } of others) assert.ok(await stageScheduled(file), `${file} has no stage scheduled yet`);
    });
    openBlobs();

    const processedAt = async (tenant: Tenant, id: string) => {
      const file = await tenant.admin.settledFile(id, 120_000);
      assert.equal(file.status, 'processed', JSON.stringify(file));
      return file.processed_at as string;
    };
    const busyAt: string[] = [];
    for (const id of busyFiles) busyAt.push(await processedAt(busy, id));
    // In turn, each other project's file comes within the first few; in the order of upload, all 30 would
    // come before them.
    for (const { tenant, file } of others) {
      const at = await processedAt(tenant, file);
      const before = busyAt.filter((busyAt) => busyAt < at).length;
      assert.ok(before <= 3, `${before} of the busy project's files were processed before another project's one`);
    }
  });
});
