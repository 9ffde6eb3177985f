/** What the hostile tenant's abuses have in common: each keeps on until stopped, then says what the tenant saw. */
import type { ApiClient } from '../../support/client.js';

export interface Attack<Report> {
  /** Ends the abuse, and whatever of it still runs, and reports what the hostile tenant saw. */
  stop(): Promise<Report>;
}

/** A run as its tenant last saw it. */
export interface RunSeen {
  id: string;
  status: string;
  error: { code: string; message: string } | null;
  steps: { type: string; is_error?: boolean; output?: string }[];
}

/** `work` again and again, `atOnce` at a time, until stopped; what each call answered, in order of answer. */
export function repeatedly<T>(work: () => Promise<T>, atOnce = 1): { stop(): Promise<T[]> } {
  let stopped = false;
  const results: T[] = [];
  let failure: unknown;
  const loops = Promise.all(
    Array.from({ length: atOnce }, async () => {
      while (!stopped) results.push(await work());
    }),
  ).catch((err: unknown) => {
    // Kept for stop(): nobody awaits the loops before then.
    stopped = true;
    failure = err;
  });
  return {
    async stop() {
      stopped = true;
      await loops;
      if (failure) throw failure;
      return results;
    },
  };
}

export async function createdAgent(client: ApiClient, fields: Record<string, unknown>): Promise<string> {
  const response = await client.post('/v1/agents', { instructions: 'Do as you are told.', ...fields });
  if (response.status !== 201) throw new Error(`POST /v1/agents answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body.id as string;
}

/** Starts a run without waiting for it; its id. */
export async function startedRun(client: ApiClient, agentId: string, input: string): Promise<string> {
  const response = await client.post(`/v1/agents/${agentId}/run`, { input, wait: false });
  if (response.status !== 202 && response.status !== 200)
    throw new Error(`POST /v1/agents/${agentId}/run answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body.id as string;
}

/** A run waited for (as long as the API waits), as it then stood. */
export async function ranRun(client: ApiClient, agentId: string, input: string): Promise<RunSeen> {
  const response = await client.post(`/v1/agents/${agentId}/run`, { input });
  if (response.status !== 200 && response.status !== 202)
    throw new Error(`POST /v1/agents/${agentId}/run answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body as RunSeen;
}

/** `work` for each of `items`, `atOnce` at a time; the results in the items' order. */
export async function inTurns<T, R>(items: T[], atOnce: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += atOnce) results.push(...(await Promise.all(items.slice(i, i + atOnce).map(work))));
  return results;
}

/** Cancels runs, ten at a time, that may have ended meanwhile (409 then). */
export async function cancelled(client: ApiClient, runIds: string[]): Promise<void> {
  await inTurns(runIds, 10, async (id) => {
    const response = await client.post(`/v1/runs/${id}/cancel`, {});
    if (response.status !== 200 && response.status !== 409)
      throw new Error(`cancelling ${id} answered ${response.status}: ${JSON.stringify(response.body)}`);
  });
}
