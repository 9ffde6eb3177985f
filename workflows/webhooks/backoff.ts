/** The waits between a delivery's attempts: its workflow sleeps them, and a failed attempt names the one after it. */

export const LONGEST_WAIT_MS = 4 * 60 * 60 * 1000;

/** The wait after a delivery's nth attempt: the initial interval, doubled after each attempt, at most 4 hours. */
export function waitAfterAttempt(initialIntervalMs: number, attempts: number): number {
  return Math.min(initialIntervalMs * 2 ** (attempts - 1), LONGEST_WAIT_MS);
}

/** The first wait after an attempt refused for its project's share of the slots, doubled after each refusal in a row. */
export const FIRST_REFUSAL_WAIT_MS = 1_000;
const LONGEST_REFUSAL_WAIT_MS = 60_000;

/**
 * The wait after the nth refusal in a row (from 0), spread by `jitter` (from 0 to 1) over its second half, so
 * that attempts refused together are not asked again together.
 */
export function waitAfterRefusal(refusals: number, jitter: number): number {
  const longest = Math.min(FIRST_REFUSAL_WAIT_MS * 2 ** refusals, LONGEST_REFUSAL_WAIT_MS);
  return Math.round(longest * (0.5 + jitter / 2));
}
