/**
 * A run as the rows of its tree: its own steps (model and tool calls; a supervisor's calls in a network
 * run) and, for a network run, its hops, each of which opens onto the steps of its child run. Times are
 * milliseconds from the top run's start; costs are shares of the top run's total.
 */
import type { Schemas } from '../api';

/** A run with every one of its steps (the console reads them all, a page at a time). */
export type Run = Schemas['Run'];
export type RunStep = Schemas['RunStep'];
export type RunHop = Schemas['RunHop'];

interface RowBase {
  /** Unique among the rows, and the step's part of a deep link (`3`, `h1.3`). */
  key: string;
  depth: number;
  startMs: number;
  /** Null while it runs. */
  endMs: number | null;
  cost: number;
  /** The cost as the API wrote it (exact); null for a step that costs nothing by its nature (a tool call). */
  costText: string | null;
  tokens: number | null;
  status: string;
}
export interface StepRow extends RowBase {
  kind: 'step';
  runId: string;
  step: RunStep;
  queuedMs: number | null;
  hop?: number;
}
export interface HopRow extends RowBase {
  kind: 'hop';
  hop: RunHop;
  expanded: boolean;
  /** Expanded, and its child run still loading. */
  loading: boolean;
}
export type TreeRow = StepRow | HopRow;

/** The part of a deep link that names a step: its index, or `h<hop>.<index>` for a hop's step. */
export const stepKey = (index: number, hop?: number) => (hop === undefined ? String(index) : `h${hop}.${index}`);

/** The hop a step key belongs to, if any. */
export function hopOfKey(key: string | undefined): number | undefined {
  const match = key ? /^h(\d+)\./.exec(key) : null;
  return match ? Number(match[1]) : undefined;
}

const money = (value: string | undefined) => (value ? Number(value) : 0);
const tokensOf = (usage: Schemas['TokenUsage'] | undefined) => (usage ? usage.input_tokens + usage.output_tokens : null);

function stepRow(runId: string, step: RunStep, baseMs: number, depth: number, hop?: number): StepRow {
  const startMs = baseMs + (step.offset_ms ?? 0);
  return {
    kind: 'step',
    key: stepKey(step.index, hop),
    depth,
    runId,
    step,
    hop,
    startMs,
    endMs: step.duration_ms === null ? null : startMs + step.duration_ms,
    queuedMs: step.queued_ms ?? null,
    cost: money(step.cost),
    costText: step.cost ?? null,
    tokens: tokensOf(step.usage),
    status: step.status,
  };
}

/** The rows of `run`, hops in `expanded` opened onto their child runs (from `children`, by child run id). */
export function rowsOf(run: Run, expanded: ReadonlySet<number>, children: ReadonlyMap<string, Run>): TreeRow[] {
  const own: TreeRow[] = run.steps.map((step) => stepRow(run.id, step, 0, 0));
  const hops: TreeRow[][] = run.hops.map((hop) => {
    const open = expanded.has(hop.index);
    const child = children.get(hop.child_run_id);
    const startMs = hop.offset_ms ?? 0;
    const row: HopRow = {
      kind: 'hop',
      key: `h${hop.index}`,
      depth: 0,
      hop,
      expanded: open,
      loading: open && !child,
      startMs,
      endMs: hop.duration_ms === null || hop.duration_ms === undefined ? null : startMs + hop.duration_ms,
      cost: money(hop.cost),
      costText: hop.cost,
      tokens: tokensOf(hop.usage),
      status: hop.status,
    };
    return [row, ...(open && child ? child.steps.map((step) => stepRow(child.id, step, startMs, 1, hop.index)) : [])];
  });
  // A supervisor's calls and the hops they chose, in the order they happened.
  const groups = [...own.map((row) => [row]), ...hops].sort((a, b) => a[0]!.startMs - b[0]!.startMs);
  return groups.flat();
}

/**
 * The span the timeline covers, in milliseconds: to the last step's end for a finished run (its own end is
 * known to the second only), to now for one still going.
 */
export function spanOf(run: Run, rows: TreeRow[], now: number): number {
  const lastEnd = rows.reduce((latest, row) => Math.max(latest, row.endMs ?? row.startMs), 0);
  if (run.completed_at !== null) return Math.max(1, lastEnd);
  return Math.max(1, lastEnd, now - (run.started_at ?? run.created_at) * 1000);
}

/** What a run's duration is read from: a run in full, or as lists show it (without steps). */
type RunTimes = Pick<Schemas['RunSummary'], 'started_at' | 'completed_at' | 'hops'> & { steps?: RunStep[] };

/**
 * How long a run took (so far), in milliseconds: its steps and hops know their times to the millisecond,
 * its own timestamps only to the second. Null before it starts.
 */
export function runDurationMs(run: RunTimes, now = Date.now()): number | null {
  if (run.started_at === null) return null;
  if (run.completed_at === null) return Math.max(0, now - run.started_at * 1000);
  const ends = [
    ...(run.steps ?? []).map((s) => (s.offset_ms ?? 0) + (s.duration_ms ?? 0)),
    ...run.hops.map((h) => (h.offset_ms ?? 0) + (h.duration_ms ?? 0)),
  ];
  return ends.length > 0 ? Math.max(...ends) : (run.completed_at - run.started_at) * 1000;
}

/** The model a run used, or asked for; a network run without a router model has none of its own. */
export const modelOf = (run: Pick<Run, 'resolved_model' | 'model'>) => run.resolved_model ?? (run.model === 'none' ? null : run.model);
