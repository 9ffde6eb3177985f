/** Timestamps on the wire are Unix seconds. */
export function unixSeconds(date: Date): number;
export function unixSeconds(date: Date | null): number | null;
export function unixSeconds(date: Date | null): number | null {
  return date === null ? null : Math.floor(date.getTime() / 1000);
}
