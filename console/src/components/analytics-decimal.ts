/**
 * Sums of the API's exact decimal strings, kept exact: a total of costs is never rounded through a float,
 * so the table and the CSV say what the ledger says.
 */

function parse(value: string): { digits: bigint; scale: number } {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(value.trim());
  if (!match) throw new Error(`not a decimal: ${value}`);
  const [, sign = '', whole = '0', fraction = ''] = match;
  const digits = BigInt(`${whole}${fraction}`);
  return { digits: sign ? -digits : digits, scale: fraction.length };
}

function print(digits: bigint, scale: number): string {
  const negative = digits < 0n;
  const text = (negative ? -digits : digits).toString().padStart(scale + 1, '0');
  const whole = text.slice(0, text.length - scale);
  const fraction = text.slice(text.length - scale).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** The exact sum of decimal strings, written as the API writes amounts (no trailing zeros). */
export function sumDecimals(values: Iterable<string>): string {
  let total = 0n;
  let scale = 0;
  for (const value of values) {
    const next = parse(value);
    if (next.scale > scale) {
      total *= 10n ** BigInt(next.scale - scale);
      scale = next.scale;
    }
    total += next.digits * 10n ** BigInt(scale - next.scale);
  }
  return print(total, scale);
}

/** Whether an exact decimal string is zero. */
export const isZero = (value: string) => parse(value).digits === 0n;
