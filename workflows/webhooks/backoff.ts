/** The waits between a delivery's attempts: its workflow sleeps them, and a failed attempt names the one after it. */

export const LONGEST_WAIT_MS = 4 * 60 * 60 * 1000;

/** The wait after a delivery's nth attempt: the initial interval, doubled after each attempt, at most 4 hours. */
export function waitAfterAttempt(initialIntervalMs: number, attempts: number): number {
  return Math.min(initialIntervalMs * 2 ** (attempts - 1), LONGEST_WAIT_MS);
}
