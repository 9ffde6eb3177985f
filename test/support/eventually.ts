/** Polls until `check` passes or the deadline passes; the last failure is what is reported. */
export async function eventually<T>(
  check: () => Promise<T> | T,
  {
    timeoutMs = 30_000,
    intervalMs = 100,
    message = 'condition not met',
  }: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(`${message} within ${timeoutMs} ms: ${(err as Error).message}`, { cause: err });
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}

/**
 * `promise`, or a rejection with `message` once `ms` have passed: a bound that only keeps a failure from waiting
 * for the suite's timeout.
 */
export function withinDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(message)), ms).unref())]);
}
