import type { components } from '../api/generated/openapi.js';
import type { BudgetRecord } from '../records/budgets.js';
import { unixSeconds } from './time.js';

export type BudgetObject = components['schemas']['Budget'];

export function presentBudget(budget: BudgetRecord): BudgetObject {
  return {
    id: budget.id,
    object: 'budget',
    name: budget.name,
    scope: { type: budget.scope_type, id: budget.scope_id },
    period: budget.period,
    limit_usd: budget.limit_usd,
    thresholds: budget.thresholds.map(Number),
    spent_usd: budget.spent_usd,
    period_start: unixSeconds(budget.period_start),
    period_end: unixSeconds(budget.period_end),
    created_at: unixSeconds(budget.created_at),
    updated_at: unixSeconds(budget.updated_at),
  };
}

export function presentDeletedBudget(id: string): components['schemas']['DeletedBudget'] {
  return { id, object: 'budget', deleted: true };
}
