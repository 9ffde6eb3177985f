import type { PageRequest } from '../records/pagination.js';
import { InvalidRequestError } from './errors.js';

/**
 * A cursor as a list query gave it. An empty one (`after=`, as a client filling in a template for its first
 * page sends) is no cursor.
 */
export const cursorOf = (value: string | undefined): string | undefined => (value === '' ? undefined : value);

/** The page a validated list query asks for (the document's defaults applied). */
export function pageRequestOf(query: PageRequest): PageRequest {
  const after = cursorOf(query.after);
  const before = cursorOf(query.before);
  if (after !== undefined && before !== undefined) {
    throw InvalidRequestError('invalid_parameter', 'Give `after` or `before`, not both.', 'before');
  }
  return { limit: query.limit, order: query.order, after, before };
}
