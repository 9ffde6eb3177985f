/**
 * A cost report as the Costs view shows it: one column per group (biggest spend first), one row per bucket
 * with spend, and totals; every amount the API's exact decimal string or an exact sum of them. The CSV is
 * written from the same strings.
 */
import type { Schemas } from '../api';
import { sumDecimals, isZero } from './analytics-decimal';
import { groupValue, type Dimension } from './analytics-group';

type CostBucket = Schemas['CostReport']['data'][number];

export interface CostGroup {
  /** The grouped dimension's value; null when calls had none (a network's router has no agent). */
  value: string | null;
  total: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
}

export interface CostRow {
  start: number;
  end: number;
  /** Per group, in the order of `groups`: the bucket's amount, or null when the group spent nothing in it. */
  amounts: (string | null)[];
  total: string;
}

export interface CostTable {
  groups: CostGroup[];
  /** Every bucket of the range, in order, spending or not. */
  buckets: CostRow[];
  total: string;
}

export function costTable(buckets: CostBucket[], dimension: Dimension | null): CostTable {
  const groups = new Map<
    string,
    { value: string | null; amounts: string[]; requests: number; inputTokens: number; outputTokens: number }
  >();
  const cells: Map<string, string[]>[] = [];
  for (const bucket of buckets) {
    const inBucket = new Map<string, string[]>();
    for (const result of bucket.results) {
      const value = groupValue(result, dimension);
      const key = JSON.stringify(value);
      const group = groups.get(key) ?? { value, amounts: [], requests: 0, inputTokens: 0, outputTokens: 0 };
      groups.set(key, group);
      group.amounts.push(result.amount.value);
      group.requests += result.num_model_requests;
      group.inputTokens += result.input_tokens;
      group.outputTokens += result.output_tokens;
      inBucket.set(key, [...(inBucket.get(key) ?? []), result.amount.value]);
    }
    cells.push(inBucket);
  }
  const ordered = [...groups.entries()]
    .map(([key, g]) => ({
      key,
      group: {
        value: g.value,
        total: sumDecimals(g.amounts),
        requests: g.requests,
        inputTokens: g.inputTokens,
        outputTokens: g.outputTokens,
      },
    }))
    .sort((a, b) => compareDecimals(b.group.total, a.group.total) || String(a.group.value).localeCompare(String(b.group.value)));
  const rows = buckets.map((bucket, i) => {
    const amounts = ordered.map(({ key }) => {
      const values = cells[i]!.get(key);
      return values ? sumDecimals(values) : null;
    });
    return { start: bucket.start_time, end: bucket.end_time, amounts, total: sumDecimals(amounts.filter((a): a is string => a !== null)) };
  });
  return { groups: ordered.map(({ group }) => group), buckets: rows, total: sumDecimals(ordered.map(({ group }) => group.total)) };
}

/** Rows worth a line in the table: buckets in which something was spent. */
export const spendingRows = (table: CostTable) =>
  table.buckets.filter((row) => row.amounts.some((a) => a !== null && !isZero(a)) || !isZero(row.total));

function compareDecimals(a: string, b: string): number {
  const [aw = '0', af = ''] = a.replace(/^-/, '').split('.');
  const [bw = '0', bf = ''] = b.replace(/^-/, '').split('.');
  const scale = Math.max(af.length, bf.length);
  const x = BigInt(aw + af.padEnd(scale, '0')) * (a.startsWith('-') ? -1n : 1n);
  const y = BigInt(bw + bf.padEnd(scale, '0')) * (b.startsWith('-') ? -1n : 1n);
  return x < y ? -1 : x > y ? 1 : 0;
}

export const groupLabel = (value: string | null) => value ?? '(none)';

const csvField = (text: string) => (/[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);

/**
 * A label as a spreadsheet cell that stays text: labels come from what API clients wrote (metadata values,
 * names), and one starting = + - @, a tab or a carriage return would otherwise run as a formula when the file
 * is opened (`=HYPERLINK(…)` sending the sheet's cells away).
 */
export const csvText = (text: string) => (/^[=+\-@\t\r]/.test(text) ? `'${text}` : text);

/** The table as CSV: a header, one line per bucket shown, and the totals; amounts exactly as the API wrote them. */
export function costCsv(table: CostTable, label: (start: number) => string): string {
  const lines = [['Bucket', ...table.groups.map((g) => csvText(groupLabel(g.value))), 'Total']];
  for (const row of spendingRows(table)) lines.push([label(row.start), ...row.amounts.map((a) => a ?? ''), row.total]);
  lines.push(['Total', ...table.groups.map((g) => g.total), table.total]);
  return lines.map((line) => line.map(csvField).join(',')).join('\r\n') + '\r\n';
}
