import type { PageRequest } from '../records/pagination.js';
import { InvalidRequestError } from './errors.js';

/** The page a validated list query asks for (the document's defaults applied). */
export function pageRequestOf(query: PageRequest): PageRequest {
  if (query.after !== undefined && query.before !== undefined) {
    throw InvalidRequestError('invalid_parameter', 'Give `after` or `before`, not both.', 'before');
  }
  return { limit: query.limit, order: query.order, after: query.after, before: query.before };
}
