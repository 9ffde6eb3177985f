import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { audited, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { ApiError } from '../../errors.js';
import { createOnce } from '../../idempotency.js';
import { insertProject } from '../../../records/projects.js';
import { presentProject } from '../../../presenters/project.js';

export function projectRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/projects',
    audited(deps.db, 'project.create', 'project'),
    operation('createProject', async (ctx, { body }) => {
      if (!callerOf(ctx).bootstrap) {
        throw new ApiError(
          403,
          'permission_error',
          'bootstrap_key_required',
          'Only the bootstrap admin key (AGENTPLANE_ADMIN_KEY) creates projects.',
        );
      }
      const { created } = await createOnce(ctx, deps, body, async (tx) => ({
        status: 201,
        body: presentProject(await insertProject(tx, body.name)),
      }));
      respond(ctx, created);
    }),
  );
}
