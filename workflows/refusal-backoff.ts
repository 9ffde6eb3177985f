/**
 * The waits of a call refused for its project's share of a worker's slots (`slot-shares.ts`): its workflow
 * sleeps them, holding no slot, and asks again. Workflow code: no I/O.
 */

/** The first wait after a refusal, doubled after each refusal in a row. */
export const FIRST_REFUSAL_WAIT_MS = 1_000;
/** The longest wait: a refused call asks again within it. */
export const LONGEST_REFUSAL_WAIT_MS = 60_000;

/**
 * The wait after the nth refusal in a row (from 0), spread by `jitter` (from 0 to 1) over its second half, so
 * that calls refused together are not asked again together; `factor` times longer (up to the longest wait) when
 * the worker answered that many of the project's calls wait (`SlotRefusal.slotsTaken.waitFactor`).
 */
export function waitAfterRefusal(refusals: number, jitter: number, factor = 1): number {
  const longest = Math.min(FIRST_REFUSAL_WAIT_MS * 2 ** refusals * Math.max(1, factor), LONGEST_REFUSAL_WAIT_MS);
  return Math.round(longest * (0.5 + jitter / 2));
}
