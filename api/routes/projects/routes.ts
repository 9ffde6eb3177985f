import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { audited } from '../../middleware/audit.js';
import { validateBody } from '../../validation.js';
import { ApiError } from '../../errors.js';
import { createOnce, fingerprintOf } from '../../idempotency.js';
import { insertProject } from '../../../records/projects.js';
import { unixSeconds } from '../../../records/db.js';
import type { components } from '../../generated/openapi.js';

type CreateProjectRequest = components['schemas']['CreateProjectRequest'];

export function projectRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post('/v1/projects', audited(deps.db, 'project.create', 'project'), validateBody('CreateProjectRequest'), async (ctx) => {
    if (!callerOf(ctx).bootstrap) {
      throw new ApiError(403, 'permission_error', 'bootstrap_key_required', 'Only the bootstrap admin key (AGENTPLANE_ADMIN_KEY) creates projects.');
    }
    const request = ctx.request.body as CreateProjectRequest;
    const { created } = await createOnce(ctx, deps, fingerprintOf(request), async (tx) => {
      const project = await insertProject(tx, request.name);
      return { status: 201, body: { id: project.id, object: 'project', name: project.name, created_at: unixSeconds(project.created_at) } };
    });
    ctx.state.auditTargetId = (created.body as { id: string }).id;
    ctx.status = created.status;
    ctx.body = created.body;
  });
}
