/**
 * What a new run is refused for, before its row is inserted and in the same transaction: the key's
 * concurrent runs (counted under the key's lock, so replicas cannot both find room for one more), its
 * project's across its keys (under the project's lock, taken after the key's), and the
 * budgets of its project, key and agents (a budget whose period's spend has reached its limit): an agent run's
 * agent, or a network run's members, any of whom its hops may run.
 */
import type { Queryable } from '../../../records/db.js';
import { lockActiveRuns } from '../../../records/rate-limits.js';
import { exhaustedBudget } from '../../../records/budgets.js';
import { presentBudget } from '../../../presenters/budget.js';
import type { ApiDeps, Caller } from '../../context.js';
import { RateLimitError } from '../../errors.js';
import { concurrentRunsOf } from '../../middleware/rate-limit.js';

// A run's end cannot be foreseen; a client polling this often does not flood the API.
const CONCURRENT_RETRY_AFTER_SECONDS = 5;

export async function refuseOverLimits(
  tx: Queryable,
  deps: Pick<ApiDeps, 'rateLimits'>,
  caller: Caller,
  agentIds: string[],
): Promise<void> {
  const limit = concurrentRunsOf(caller, deps.rateLimits);
  if (limit !== null) {
    const active = await lockActiveRuns(tx, 'api_key', caller.apiKeyId);
    if (active >= limit) {
      throw RateLimitError(
        'concurrent_runs_exceeded',
        `This API key may have ${limit} run${limit === 1 ? '' : 's'} queued or in progress at once; it has ${active}.`,
        CONCURRENT_RETRY_AFTER_SECONDS,
      );
    }
  }
  const projectLimit = deps.rateLimits?.projectConcurrentRuns;
  if (projectLimit !== undefined) {
    const active = await lockActiveRuns(tx, 'project', caller.projectId);
    if (active >= projectLimit) {
      throw RateLimitError(
        'concurrent_runs_exceeded',
        `This project's API keys may have ${projectLimit} run${projectLimit === 1 ? '' : 's'} queued or in progress at once together; they have ${active}.`,
        CONCURRENT_RETRY_AFTER_SECONDS,
      );
    }
  }
  const budget = await exhaustedBudget(tx, { projectId: caller.projectId, apiKeyId: caller.apiKeyId, agentIds });
  if (budget) {
    const retryAfter = Math.max(1, Math.ceil((budget.period_end.getTime() - Date.now()) / 1000));
    throw RateLimitError(
      'budget_exceeded',
      `The ${budget.period === 'day' ? 'daily' : 'monthly'} budget ${budget.id} on this ${budget.scope_type.replace('_', ' ')} is spent: ${budget.spent_usd} USD of ${budget.limit_usd} USD.`,
      retryAfter,
      { budget: presentBudget(budget), spent_usd: budget.spent_usd },
    );
  }
}
