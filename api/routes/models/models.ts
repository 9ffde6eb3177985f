import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { operation } from '../../validation.js';
import { presentModel } from '../../../presenters/model.js';

export function modelRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/models',
    operation('listModels', async (ctx) => {
      const now = new Date();
      const data = deps.models.list().map((model) => presentModel(deps.models, model, now));
      ctx.body = { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false };
    }),
  );
}
