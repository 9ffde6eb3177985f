/** Exact arithmetic on the decimal strings the API answers amounts of money with. */

/** Exact decimal sum of decimal strings (no floating point), without trailing zeros. */
export function sumOf(values: (string | null | undefined)[]): string {
  const SCALE = 18;
  let total = 0n;
  for (const value of values) {
    if (!value) continue;
    const [whole = '0', fraction = ''] = value.split('.');
    total += BigInt(whole) * 10n ** BigInt(SCALE) + BigInt(fraction.padEnd(SCALE, '0').slice(0, SCALE) || '0');
  }
  const digits = total.toString().padStart(SCALE + 1, '0');
  const fraction = digits.slice(-SCALE).replace(/0+$/, '');
  return `${digits.slice(0, -SCALE)}${fraction ? `.${fraction}` : ''}`;
}
