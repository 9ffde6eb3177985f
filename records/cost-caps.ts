/**
 * Hard cost caps. Before a run's model call, its worst case is reserved against every cap it counts towards: the
 * run's own `max_cost_usd`, its network run's (which covers the whole tree), and each budget that applies. A call
 * that would not fit is not made. What was spent is what the records say (the runs' costs, a budget's usage
 * rollups); what may yet be spent is the reservations of the calls in flight. A reservation goes in the transaction
 * that records its call's usage (which costs no more than it), with the call's failure, or with the end of its
 * run, so what is spent plus what is reserved never falls below what will have been recorded.
 *
 * Reservations against one tree, or one budget, are taken one at a time under advisory locks (the tree's first,
 * then the budgets' in id order, the order the ledger's threshold check takes them in too), so calls made at
 * once cannot all find the same room. A run with no cap and no budget reserves nothing.
 */
import { statement, type Queryable } from './db.js';
import type { PriceApplied } from './run-steps.js';
import { APPLIES, COUNTS_FOR, SPENT } from './budgets.js';

/** A model call's worst case: every token its input may count, and its output allowance, at the model's price. */
export interface ModelCallBound {
  runId: string;
  stepIndex: number;
  model: string;
  inputTokens: number;
  outputTokens: number;
  price: PriceApplied;
}

export type Reservation = { reserved: boolean } | { refused: string };

interface CapUse {
  kind: 'run' | 'tree' | 'budget';
  id: string;
  limit_usd: string;
  left_usd: string;
  fits: boolean;
  period: string | null;
}

const HELD_BY_OTHERS = 'NOT (h.run_id = $1 AND h.step_index = $2)';

const CAPS_OF_RUN = statement(
  'caps_of_run',
  `SELECT r.project_id, r.api_key_id, r.agent_id, coalesce(r.parent_run_id, r.id) AS root_id,
       array_remove(ARRAY[CASE WHEN r.max_cost_usd IS NOT NULL THEN r.id END, CASE WHEN p.max_cost_usd IS NOT NULL THEN p.id END], NULL) AS capped,
       ARRAY(SELECT b.id FROM budgets b WHERE ${APPLIES('r.project_id', 'r.api_key_id', 'array_remove(ARRAY[r.agent_id], NULL)')} ORDER BY b.id) AS budgets,
       usage_cost($2::bigint, 0, $3::bigint, $4::numeric, $5::numeric, $6::numeric)::text AS worst
     FROM runs r LEFT JOIN runs p ON p.id = r.parent_run_id WHERE r.id = $1`,
);

/** What a call is reserved against: its run, the capped runs of its tree and the budgets that apply to it. */
export interface CapsOfCall {
  project_id: string;
  api_key_id: string | null;
  agent_id: string | null;
  root_id: string;
  capped: string[];
  budgets: string[];
  worst: string;
}

/** The call's caps, in one read; null when there is no run. */
export async function capsOfCall(db: Queryable, bound: ModelCallBound): Promise<CapsOfCall | null> {
  const { price } = bound;
  const { rows } = await db.query<CapsOfCall>(CAPS_OF_RUN, [
    bound.runId,
    bound.inputTokens,
    bound.outputTokens,
    price.input_per_million,
    price.cached_input_per_million,
    price.output_per_million,
  ]);
  return rows[0] ?? null;
}

/** Whether a call with these caps reserves nothing: its run has no cap, and no budget applies. */
export const reservesNothing = (caps: CapsOfCall | null): boolean => !caps || (caps.capped.length === 0 && caps.budgets.length === 0);

/**
 * Reserves the call's worst case in `tx` against its caps (`run`, capsOfCall's), or says which cap it would not fit. Made
 * again for the same step (a retried attempt), it replaces that step's reservation rather than counting it twice.
 * A cap or budget made after they were read counts from the next call.
 */
export async function reserveModelCall(tx: Queryable, bound: ModelCallBound, run: CapsOfCall | null): Promise<Reservation> {
  if (!run || reservesNothing(run)) return { reserved: false };
  if (run.capped.length > 0) await tx.query(`SELECT pg_advisory_xact_lock(hashtext('cost-tree:' || $1))`, [run.root_id]);
  if (run.budgets.length > 0)
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('budget:' || id)) FROM unnest($1::text[]) AS id`, [run.budgets]);

  // A capped run's use: its own cost (a network run's includes its ended hops'), its hops still running, and the
  // reservations of its tree. A budget's: its period's spend, and the reservations of the calls it counts.
  const { rows: caps } = await tx.query<CapUse>(
    `WITH caps AS (
       SELECT CASE WHEN r.parent_run_id IS NULL AND r.network_id IS NOT NULL THEN 'tree' ELSE 'run' END AS kind, r.id,
         r.max_cost_usd AS limit_value, NULL::text AS period, 0 AS rank,
         r.cost + coalesce((SELECT sum(c.cost) FROM runs c WHERE c.parent_run_id = r.id AND c.status IN ('queued', 'in_progress')), 0)
           + coalesce((SELECT sum(h.amount) FROM cost_reservations h WHERE (h.run_id = r.id OR h.root_run_id = r.id) AND ${HELD_BY_OTHERS}), 0) AS used
       FROM runs r WHERE r.id = ANY($3::text[])
       UNION ALL
       SELECT 'budget', b.id, b.limit_usd, b.period, 1,
         ${SPENT('b')} + coalesce((SELECT sum(h.amount) FROM cost_reservations h WHERE ${COUNTS_FOR('b', 'h')} AND ${HELD_BY_OTHERS}), 0)
       FROM budgets b WHERE b.id = ANY($4::text[])
     )
     SELECT kind, id, trim_scale(limit_value)::text AS limit_usd, trim_scale(greatest(limit_value - used, 0))::text AS left_usd,
       used + $5::numeric <= limit_value AS fits, period
     FROM caps ORDER BY rank, id`,
    [bound.runId, bound.stepIndex, run.capped, run.budgets, run.worst],
  );
  const tight = caps.find((cap) => !cap.fits);
  if (tight) return { refused: refusalOf(tight, bound, run.worst) };

  await tx.query(
    `INSERT INTO cost_reservations (run_id, step_index, root_run_id, project_id, api_key_id, agent_id, amount)
     VALUES ($1, $2, $3, $4, $5, $6, $7::numeric)
     ON CONFLICT (run_id, step_index) DO UPDATE SET amount = EXCLUDED.amount, created_at = now()`,
    [bound.runId, bound.stepIndex, run.root_id, run.project_id, run.api_key_id, run.agent_id, run.worst],
  );
  return { reserved: true };
}

function refusalOf(cap: CapUse, bound: ModelCallBound, worst: string): string {
  const what =
    cap.kind === 'budget'
      ? `the ${cap.period === 'day' ? 'daily' : 'monthly'} budget ${cap.id} (${cap.limit_usd} USD)`
      : cap.kind === 'tree'
        ? `the network run ${cap.id}'s max_cost_usd (${cap.limit_usd} USD, for its hops too)`
        : `the run ${cap.id}'s max_cost_usd (${cap.limit_usd} USD)`;
  return (
    `The next model call could cost up to ${worst} USD (${bound.inputTokens} input and ${bound.outputTokens} output tokens ` +
    `at ${bound.model}'s price), more than is left of ${what}: ${cap.left_usd} USD.`
  );
}

const RELEASE_RESERVATION = statement('release_reservation', 'DELETE FROM cost_reservations WHERE run_id = $1 AND step_index = $2');

/** With the call's usage recorded, or its failure: the step's reservation goes. */
export async function releaseReservation(tx: Queryable, runId: string, stepIndex: number): Promise<void> {
  await tx.query(RELEASE_RESERVATION, [runId, stepIndex]);
}
