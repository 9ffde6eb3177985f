/** The Koa application: cross-cutting middleware, then one router per resource. */
import { METHODS } from 'node:http';
import Koa, { type Middleware } from 'koa';
import Router from '@koa/router';
import type { ApiDeps, ApiState } from './context.js';
import { handleErrors } from './errors.js';
import { createMetrics, type ApiMetrics } from './metrics.js';
import { requestContext } from './middleware/request-context.js';
import { authenticate, KeyCache } from './middleware/auth.js';
import { limitRequests } from './middleware/rate-limit.js';
import { refuseNulInUrl } from './validation.js';
import { systemRoutes } from './routes/system.js';
import { fileRoutes } from './routes/files/files.js';
import { fileContentRoutes } from './routes/files/content.js';
import { graphRoutes } from './routes/graph/graph.js';
import { apiKeyRoutes } from './routes/api-keys/api-keys.js';
import { projectRoutes } from './routes/projects/projects.js';
import { auditLogRoutes } from './routes/audit-logs/audit-logs.js';
import { agentRoutes } from './routes/agents/agents.js';
import { runRoutes } from './routes/runs/runs.js';
import { modelRoutes } from './routes/models/models.js';
import { networkRoutes } from './routes/networks/networks.js';
import { budgetRoutes } from './routes/budgets/budgets.js';
import { scheduleRoutes } from './routes/schedules/schedules.js';
import { approvalRoutes } from './routes/approvals/approvals.js';
import { threadRoutes } from './routes/threads/threads.js';
import { experimentRoutes } from './routes/experiments/experiments.js';
import { experimentComparisonRoutes } from './routes/experiments/comparison.js';
import { memoryRoutes } from './routes/memories/memories.js';
import { datasetRoutes } from './routes/datasets/datasets.js';
import { datasetItemRoutes } from './routes/datasets/items.js';
import { datasetImportMethods, datasetImportRoutes } from './routes/datasets/import.js';
import { costRoutes } from './routes/analytics/costs.js';
import { qualityRoutes } from './routes/analytics/quality.js';
import { eventRoutes } from './routes/events/events.js';
import { webhookRoutes } from './routes/webhooks/webhooks.js';
import { webhookDeliveryRoutes } from './routes/webhooks/deliveries.js';
import { sessionRoutes, signInRoute } from './routes/sessions/sessions.js';
import { DEFAULT_CONSOLE_DIR, serveConsole } from './console.js';
import { stripBasePath } from './base-path.js';
import { mcpRoutes } from './routes/mcp/mcp.js';
import { a2aRoutes } from './a2a/routes.js';
import { traceRequests } from './middleware/tracing.js';
import { admitFairly, FairAdmission } from './fair-admission.js';
import { tracingOn } from '../tracing/context.js';

export function createApp(deps: ApiDeps): { app: Koa<ApiState>; router: Router<ApiState>; metrics: ApiMetrics } {
  // Behind a proxy (the chart's ingress), the client is the address that proxy reports: the last
  // X-Forwarded-For entry, which a client cannot forge past it.
  const app = new Koa<ApiState>({ proxy: true, maxIpsCount: 1 });
  const metrics = createMetrics();
  const keys = new KeyCache();
  // What reaches Koa's own handler is a connection that failed outside any middleware (a client gone
  // mid-upload); Koa would print it to stderr, so it goes to the structured log instead.
  app.on('error', (err: Error, ctx?: { state?: Partial<ApiState> }) => (ctx?.state?.log ?? deps.log).warn({ err }, 'connection error'));

  if (tracingOn()) app.use(traceRequests());
  app.use(stripBasePath(deps.basePath ?? ''));
  app.use(requestContext(deps.log, metrics));
  app.use(handleErrors());
  app.use(refuseNulInUrl());
  app.use(serveConsole({ dir: deps.consoleDir ?? DEFAULT_CONSOLE_DIR, basePath: deps.basePath ?? '' }));

  // Every method Node accepts counts as known, so that one a route lacks (TRACE, PROPFIND, …) answers
  // 405 with Allow rather than the router's 501 for methods outside its short default list.
  const routerOptions = { methods: METHODS };
  const router = new Router<ApiState>(routerOptions);
  systemRoutes(router, deps, metrics, keys);
  signInRoute(router, deps);

  // Everything under /v1 but the document itself needs a key. JSON bodies are parsed by the operations that
  // take one (operation()); multipart bodies are left to the upload handler, which streams them.
  const v1 = new Router<ApiState>(routerOptions);
  const rateLimited = limitRequests(deps.db, deps.rateLimits);
  const admitted = admitFairly(new FairAdmission(deps.admission), metrics);
  // A request over its key's rate is refused before it waits for its project's turn.
  const requestLimits: Middleware<ApiState> = (ctx, next) => rateLimited(ctx, () => admitted(ctx, next));
  v1.use(authenticate(deps.db, keys));
  v1.use(requestLimits);
  fileRoutes(v1, deps);
  fileContentRoutes(v1, deps);
  graphRoutes(v1, deps);
  apiKeyRoutes(v1, deps, keys);
  sessionRoutes(v1, deps);
  projectRoutes(v1, deps);
  auditLogRoutes(v1, deps);
  modelRoutes(v1, deps);
  agentRoutes(v1, deps);
  runRoutes(v1, deps);
  networkRoutes(v1, deps);
  budgetRoutes(v1, deps);
  scheduleRoutes(v1, deps);
  approvalRoutes(v1, deps);
  threadRoutes(v1, deps);
  experimentRoutes(v1, deps);
  experimentComparisonRoutes(v1, deps);
  memoryRoutes(v1, deps);
  datasetImportRoutes(v1, deps);
  datasetRoutes(v1, deps);
  datasetItemRoutes(v1, deps);
  costRoutes(v1, deps);
  qualityRoutes(v1, deps);
  eventRoutes(v1, deps);
  webhookRoutes(v1, deps);
  webhookDeliveryRoutes(v1, deps);

  // The MCP endpoint answers in JSON-RPC's terms, errors included: a router of its own, with the same keys and limits.
  const mcp = new Router<ApiState>(routerOptions);
  mcpRoutes(mcp, deps, authenticate(deps.db, keys), requestLimits);

  app.use(router.routes());
  app.use(router.allowedMethods());
  app.use(mcp.routes());
  app.use(datasetImportMethods());
  app.use(v1.routes());
  app.use(v1.allowedMethods());
  // Agents and networks as A2A servers, with the same keys and scopes as /v1.
  const a2a = a2aRoutes(deps, authenticate(deps.db, keys), requestLimits, routerOptions);
  app.use(a2a.routes());
  app.use(a2a.allowedMethods());
  return { app, router: v1, metrics };
}
