/**
 * Every activity the worker registers: each domain's factory, merged. Activity names share one task
 * queue, so they must be unique across domains.
 */
import type { Db } from '../records/db.js';
import type { BlobStore } from '../records/blobs/store.js';
import { createExtractionActivities } from './extraction/activities.js';
import { createMaintenanceActivities } from './maintenance/activities.js';
import { createRunActivities } from './runs/activities.js';
import { createNetworkActivities } from './networks/activities.js';
import { createQualityActivities } from './quality/activities.js';
import { createMemoryActivities } from './memory/activities.js';
import { createWebhookActivities } from './webhooks/activities.js';
import { createExperimentActivities } from './experiments/activities.js';
import { createScheduleActivities } from './schedules/activities.js';
import type { ScheduledRunAdmission } from './schedules/client.js';
import { DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from './webhooks/client.js';
import type { ModelCatalogue } from '../models/catalogue.js';
import type { ModelGateway } from '../models/gateway.js';
import type { RetentionSettings } from '../records/retention.js';
import type { FairShareSettings } from './project-shares.js';

export interface ActivityDependencies {
  db: Db;
  blobs: BlobStore;
  /**
   * `graphModel`: AGENTPLANE_GRAPH_MODEL, the model that reads relations from context files; `judgeModel`: AGENTPLANE_JUDGE_MODEL, the one
   * that judges runs; `memoryModel`: AGENTPLANE_MEMORY_MODEL, the one that reads what subjects state into memories.
   */
  models: { catalogue: ModelCatalogue; gateway: ModelGateway; graphModel?: string; judgeModel?: string; memoryModel?: string };
  /** The embedding model's folder, if installed: context pages are embedded and searched by meaning. */
  embeddingModelDir?: string;
  /** AGENTPLANE_TOOLS_ALLOW_PRIVATE: tools may call private and loopback addresses. */
  toolsAllowPrivate: boolean;
  /** How webhooks are delivered (AGENTPLANE_WEBHOOK_*); the defaults when absent. */
  webhooks?: WebhookSettings;
  /** How long what ages is kept (AGENTPLANE_RETENTION_*); the defaults when absent. */
  retention?: RetentionSettings;
  /** How a schedule's time makes its run: the API's admission, given by the worker's process. */
  admitScheduledRun?: ScheduledRunAdmission;
  /**
   * How projects share the worker: when and for how long a project over its share of the busy worker waits for its
   * turn, and how long a slice of a file's extraction runs (AGENTPLANE_WORKER_*); the defaults when absent.
   */
  fairShare?: FairShareSettings;
  /** AGENTPLANE_RATE_LIMIT_PROJECT_CONCURRENT_RUNS: what a project's runs may be at once, as the API applies it. */
  projectConcurrentRuns?: number;
  /** Told the project of each run an activity reads: the worker's fair shares then know it without a query of their own. */
  runRead?: (runId: string, projectId: string) => void;
}

export const createActivities = (dependencies: ActivityDependencies) => ({
  ...createExtractionActivities(dependencies),
  ...createMaintenanceActivities(dependencies),
  ...createRunActivities(dependencies),
  ...createNetworkActivities(dependencies),
  ...createQualityActivities(dependencies),
  ...createMemoryActivities(dependencies),
  ...createExperimentActivities({
    db: dependencies.db,
    models: dependencies.models,
    projectConcurrentRuns: dependencies.projectConcurrentRuns,
  }),
  ...createWebhookActivities({ db: dependencies.db, webhooks: dependencies.webhooks ?? DEFAULT_WEBHOOK_SETTINGS }),
  ...createScheduleActivities({ db: dependencies.db, admitScheduledRun: dependencies.admitScheduledRun }),
});
