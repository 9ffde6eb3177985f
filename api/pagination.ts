import type { Page, PageRequest } from '../records/pagination.js';
import type { ApiContext } from './context.js';
import { InvalidRequestError } from './errors.js';

/** The page a validated list query asks for (validateQuery has applied the defaults). */
export function pageRequestOf(ctx: ApiContext): PageRequest {
  const query = ctx.state.query ?? {};
  if (query.after !== undefined && query.before !== undefined) {
    throw InvalidRequestError('invalid_parameter', 'Give `after` or `before`, not both.', 'before');
  }
  return {
    limit: query.limit as number,
    order: query.order as 'asc' | 'desc',
    after: query.after as string | undefined,
    before: query.before as string | undefined,
  };
}

export function presentList<R, T extends { id: string }>(page: Page<R>, present: (record: R) => T) {
  const data = page.rows.map(present);
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
    has_more: page.hasMore,
  };
}
