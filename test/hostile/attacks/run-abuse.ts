/**
 * The hostile tenant's abuse of runs themselves: listing runs that hold megabytes of tool output, holding
 * hundreds of event streams open on a run, and queueing a hundred runs behind one that never ends.
 */
import { setMaxListeners } from 'node:events';
import { newId } from '../../../records/ids.js';
import { ordering } from '../../support/model-servers/prompted.js';
import { runSatisfying } from '../../support/agents.js';
import type { Battleground } from '../battleground.js';
import { cancelled, createdAgent, inTurns, ranRun, repeatedly, startedRun, type Attack } from './attack.js';

const MIB = 1024 * 1024;

/**
 * Copies of a run, steps and all, written straight to the database: making each through the model and the
 * tool would take far longer for the same rows.
 */
async function copiesOf(ground: Battleground, runId: string, copies: number): Promise<void> {
  const ids = Array.from({ length: copies }, () => newId('run'));
  await ground.db.query(
    `INSERT INTO runs SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || jsonb_build_object('id', c.id))).*
     FROM runs r, unnest($2::text[]) AS c(id) WHERE r.id = $1`,
    [runId, ids],
  );
  await ground.db.query(
    `INSERT INTO run_steps SELECT (jsonb_populate_record(NULL::run_steps, to_jsonb(s) || jsonb_build_object('run_id', c.id))).*
     FROM run_steps s, unnest($2::text[]) AS c(id) WHERE s.run_id = $1`,
    [runId, ids],
  );
}

export interface ListSeen {
  status: number;
  bytes: number;
}

/** 100 runs, each with a 1 MiB tool output, listed 100 at a time by two clients over and over. */
export async function hugeRunLists(ground: Battleground): Promise<Attack<{ lists: ListSeen[] }>> {
  const agent = await createdAgent(ground.hostile, {
    name: 'hoarder',
    model: ground.model,
    tools: [{ type: 'http', name: 'big', method: 'GET', url: `${ground.hosts.tools.url}/bytes/${MIB}`, max_response_bytes: MIB }],
  });
  const run = await ranRun(ground.hostile, agent, ordering({ call: { name: 'big', arguments: {} } }));
  if (run.status !== 'completed') throw new Error(`the run holding a 1 MiB tool output ended ${run.status}: ${JSON.stringify(run.error)}`);
  await copiesOf(ground, run.id, 99);
  const lists = repeatedly(async (): Promise<ListSeen> => {
    const response = await fetch(`${ground.apiUrl}/v1/runs?limit=100`, { headers: { authorization: `Bearer ${ground.hostile.key}` } });
    return { status: response.status, bytes: (await response.arrayBuffer()).byteLength };
  }, 2);
  return { stop: async () => ({ lists: await lists.stop() }) };
}

export interface StreamsSeen {
  /** How many stream requests answered each status. */
  statuses: Record<number, number>;
  /** Of the 429 answers, how many said when to retry. */
  withRetryAfter: number;
}

/** `count` event streams opened at once on a run in progress, and never read. */
export async function openStreams(ground: Battleground, count: number): Promise<Attack<StreamsSeen>> {
  const agent = await createdAgent(ground.hostile, { name: 'watched', model: ground.model });
  const runId = await startedRun(ground.hostile, agent, ordering({ hang: true }));
  await runSatisfying(ground.hostile, runId, (run) => run.status === 'in_progress', 'the watched run did not start');
  const giveUp = new AbortController();
  setMaxListeners(count + 10, giveUp.signal);
  const seen: StreamsSeen = { statuses: {}, withRetryAfter: 0 };
  await Promise.all(
    Array.from({ length: count }, async () => {
      const response = await fetch(`${ground.apiUrl}/v1/runs/${runId}/events`, {
        headers: { authorization: `Bearer ${ground.hostile.key}` },
        signal: giveUp.signal,
      });
      seen.statuses[response.status] = (seen.statuses[response.status] ?? 0) + 1;
      if (response.status === 200) return;
      if (response.status === 429 && response.headers.get('retry-after')) seen.withRetryAfter++;
      await response.arrayBuffer();
    }),
  );
  return {
    async stop() {
      giveUp.abort();
      await cancelled(ground.hostile, [runId]);
      return seen;
    },
  };
}

/** A run that never ends, with an agent concurrency of `enqueue`, and `count` runs queued behind it. */
export async function queueBehindSlowRun(ground: Battleground, count: number): Promise<Attack<{ queued: number }>> {
  const agent = await createdAgent(ground.hostile, { name: 'one at a time', model: ground.model, concurrency: 'enqueue' });
  const slow = await startedRun(ground.hostile, agent, ordering({ hang: true }));
  await runSatisfying(ground.hostile, slow, (run) => run.status === 'in_progress', 'the slow run did not start');
  const answers = await inTurns(
    Array.from({ length: count }, (_, i) => i),
    10,
    (i) => ground.hostile.post(`/v1/agents/${agent}/run`, { input: `Queued ${i}.`, wait: false }),
  );
  const refused = answers.find((response) => response.status !== 202);
  if (refused) throw new Error(`queueing a run answered ${refused.status}: ${JSON.stringify(refused.body)}`);
  return {
    async stop() {
      // The queued ones first: cancelling the slow one first would start them.
      await cancelled(
        ground.hostile,
        answers.map((response) => response.body.id as string),
      );
      await cancelled(ground.hostile, [slow]);
      return { queued: answers.filter((response) => response.body.status === 'queued').length };
    },
  };
}
