/**
 * Every activity the worker registers: each domain's factory, merged. Activity names share one task
 * queue, so they must be unique across domains.
 */
import type { Db } from '../records/db.js';
import type { BlobStore } from '../records/blobs/store.js';
import { createExtractionActivities } from './extraction/activities.js';
import { createMaintenanceActivities } from './maintenance/activities.js';

export interface ActivityDependencies {
  db: Db;
  blobs: BlobStore;
}

export const createActivities = (dependencies: ActivityDependencies) => ({
  ...createExtractionActivities(dependencies),
  ...createMaintenanceActivities(dependencies),
});
