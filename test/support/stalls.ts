/** How long this thread's event loop was held while `work` ran: what every other call in the process waited. */
export async function longestStall<T>(work: () => Promise<T>): Promise<{ stalledMs: number; settled: PromiseSettledResult<T> }> {
  let [last, stalledMs] = [Date.now(), 0];
  const ticks = setInterval(() => {
    stalledMs = Math.max(stalledMs, Date.now() - last);
    last = Date.now();
  }, 20);
  const [settled] = await Promise.allSettled([work()]);
  clearInterval(ticks);
  stalledMs = Math.max(stalledMs, Date.now() - last);
  return { stalledMs, settled };
}
