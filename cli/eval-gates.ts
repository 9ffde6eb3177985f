/**
 * The gates of `agentplane eval`: conditions such as `accuracy < 0.8` that fail the command when they hold for
 * the finished experiment, read from its summary or, with a baseline, from the comparison.
 */

export type Operator = '<' | '<=' | '>' | '>=';

export interface Gate {
  /** As written, for messages. */
  text: string;
  metric: string;
  /** Which figure of the metric: its mean (the default), a latency percentile, the total cost, or a comparison figure. */
  figure: Figure;
  operator: Operator;
  threshold: number;
}

type Figure = 'mean' | 'p50' | 'p95' | 'total' | 'difference' | 'ci_low' | 'ci_high';

/** What gates read: the experiment's summary, and the comparison's metrics when there is a baseline. */
export interface GateInputs {
  summary: {
    scores: Record<string, { mean: number | null; count: number }>;
    cost_usd: string;
    latency_ms: { mean: number | null; p50: number | null; p95: number | null };
  };
  completed: number;
  comparison?: { metric: string; difference: { mean: number | null; ci_low: number | null; ci_high: number | null } }[];
}

export interface GateResult {
  gate: string;
  value: number | null;
  /** A gate fails when its condition holds, or when there is no value to check it on. */
  failed: boolean;
}

export class GateSyntaxError extends Error {}

const FIGURES: Record<string, Figure> = {
  mean: 'mean',
  p50: 'p50',
  p95: 'p95',
  total: 'total',
  difference: 'difference',
  ci_low: 'ci_low',
  ci_high: 'ci_high',
};

/** `<metric>[.<figure>] <op> <number>`, e.g. `accuracy < 0.8`, `cost_usd > 0.05`, `latency_ms.p95 > 2000`, `accuracy.difference < -0.05`. */
export function parseGate(text: string): Gate {
  const match = /^\s*([A-Za-z0-9_-]+)(?:\.([a-z0-9_]+))?\s*(<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!match)
    throw new GateSyntaxError(
      `--fail-if '${text}' is not '<metric> <op> <number>', with <op> one of <, <=, >, >= (e.g. "accuracy < 0.8").`,
    );
  const [, metric, suffix, operator, threshold] = match;
  const figure = suffix === undefined ? (metric === 'cost_usd' ? 'total' : 'mean') : FIGURES[suffix];
  if (!figure) throw new GateSyntaxError(`--fail-if '${text}': .${suffix} is not one of ${Object.keys(FIGURES).join(', ')}.`);
  if ((figure === 'p50' || figure === 'p95') && metric !== 'latency_ms')
    throw new GateSyntaxError(`--fail-if '${text}': .${figure} is only for latency_ms.`);
  if (figure === 'total' && metric !== 'cost_usd') throw new GateSyntaxError(`--fail-if '${text}': .total is only for cost_usd.`);
  return { text: text.trim(), metric: metric!, figure, operator: operator as Operator, threshold: Number(threshold) };
}

/** Whether a gate reads the comparison, which needs --baseline. */
export const needsBaseline = (gate: Gate): boolean => gate.figure === 'difference' || gate.figure === 'ci_low' || gate.figure === 'ci_high';

export function checkGates(gates: Gate[], inputs: GateInputs): GateResult[] {
  return gates.map((gate) => {
    const value = valueOf(gate, inputs);
    return { gate: gate.text, value, failed: value === null || holds(value, gate.operator, gate.threshold) };
  });
}

function valueOf(gate: Gate, { summary, completed, comparison }: GateInputs): number | null {
  if (needsBaseline(gate)) {
    const metric = comparison?.find((m) => m.metric === gate.metric);
    return metric ? metric.difference[gate.figure === 'difference' ? 'mean' : (gate.figure as 'ci_low' | 'ci_high')] : null;
  }
  if (gate.metric === 'cost_usd') {
    const total = Number(summary.cost_usd);
    if (gate.figure === 'total') return total;
    return completed > 0 ? total / completed : null;
  }
  if (gate.metric === 'latency_ms') return summary.latency_ms[gate.figure as 'mean' | 'p50' | 'p95'] ?? null;
  return summary.scores[gate.metric]?.mean ?? null;
}

function holds(value: number, operator: Operator, threshold: number): boolean {
  switch (operator) {
    case '<':
      return value < threshold;
    case '<=':
      return value <= threshold;
    case '>':
      return value > threshold;
    case '>=':
      return value >= threshold;
  }
}
