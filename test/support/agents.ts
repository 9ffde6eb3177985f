/** Agents and runs as a test creates and follows them. */
import type { ApiClient } from './client.js';
import { eventually } from './eventually.js';

export async function createAgent(client: ApiClient, fields: Record<string, unknown> = {}): Promise<any> {
  const created = await client.post('/v1/agents', { name: 'helper', model: 'gpt-4.1-mini', instructions: 'Answer briefly.', ...fields });
  if (created.status !== 201) throw new Error(`agent creation answered ${created.status}: ${JSON.stringify(created.body)}`);
  return created.body;
}

/** Polls a run until `check` holds for it. */
export function runSatisfying(
  client: ApiClient,
  runId: string,
  check: (run: any) => boolean,
  message: string,
  timeoutMs = 30_000,
): Promise<any> {
  return eventually(
    async () => {
      const run = await client.get(`/v1/runs/${runId}`);
      if (!check(run.body)) throw new Error(`run is ${run.body.status}`);
      return run.body;
    },
    { timeoutMs, message },
  );
}
