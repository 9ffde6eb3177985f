/**
 * The tenant that only wants its work done: one-step runs, one after another on each of a few clients,
 * every fourth calling an HTTP tool on its own host, and a webhook for every run that completes. What it
 * counts as a failure is what its users would notice: a request answered 429 or 5xx, a run that does not
 * complete, a tool call that errs, a webhook that never comes.
 */
import { setTimeout } from 'node:timers/promises';
import { timed } from '../../bench/runs.js';
import type { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { ordering } from '../support/model-servers/prompted.js';
import type { Battleground } from './battleground.js';

const HOOK_PATH = '/steady-runs';
/** How long the webhooks of the runs made may take to arrive once the runs are done. */
const DELIVERY_DEADLINE_MS = 20_000;

/** A run that completed, as its client saw it. */
export interface AnsweredRun {
  runId: string;
  /** When its request was sent, in milliseconds since the epoch. */
  sentAtMs: number;
  /** Its time from request to its completed answer. */
  ms: number;
}

export interface SteadyOutcome {
  /** The runs that completed without a failure, in order of completion. */
  answered: AnsweredRun[];
  /** What went wrong, one line each; empty when the tenant noticed nothing. */
  failures: string[];
}

/** One run as its client saw it: its id once it completed, and what went wrong, if anything. */
type RunOutcome = { runId?: string; failure: string | null };

export interface SteadyTenant {
  /**
   * Makes `runs` runs, `atOnce` clients each starting its next when its last one answered, and checks their
   * webhooks unless told not to. With `everyMs`, a client starts a run no sooner than that after its last one
   * started: a tenant with a pace of its own, rather than one that takes whatever the platform gives. Gives up after `maxFailures` failures (a platform that stopped answering
   * would otherwise hold every run for the API's whole wait).
   */
  work(runs: number, options?: { atOnce?: number; webhooks?: boolean; maxFailures?: number; everyMs?: number }): Promise<SteadyOutcome>;
}

async function created(client: ApiClient, path: string, body: unknown): Promise<string> {
  const response = await client.post(path, body);
  if (response.status !== 201) throw new Error(`POST ${path} answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body.id as string;
}

export async function prepareSteadyTenant(ground: Battleground): Promise<SteadyTenant> {
  const { steady: client, hosts } = ground;
  const plain = await created(client, '/v1/agents', { name: 'steady', model: ground.model, instructions: 'Answer briefly.' });
  const tooled = await created(client, '/v1/agents', {
    name: 'steady with a tool',
    model: ground.model,
    instructions: 'Look things up.',
    tools: [
      {
        type: 'http',
        name: 'lookup',
        url: `${hosts.steadyToolUrl}/echo`,
        parameters: { type: 'object', properties: { q: { type: 'string', pattern: '^[a-z]+$' } } },
      },
    ],
  });
  await created(client, '/v1/webhooks', { url: `${hosts.steadyHookUrl}${HOOK_PATH}`, event_types: ['run.completed'] });
  const lookup = ordering({ call: { name: 'lookup', arguments: { q: 'steady' } } });

  /** One run, waited for: its id once it completed, and a description of what went wrong, or null. */
  async function oneRun(n: number, completed: string[]): Promise<RunOutcome> {
    const withTool = n % 4 === 3;
    const path = `/v1/agents/${withTool ? tooled : plain}/run`;
    const response = await client.post(path, { input: withTool ? lookup : `Question ${n}?` });
    if (response.status !== 200)
      return { failure: `run ${n}: POST ${path} answered ${response.status}: ${JSON.stringify(response.body).slice(0, 300)}` };
    const run = response.body;
    if (run.status !== 'completed') return { failure: `run ${n} ended ${run.status}: ${JSON.stringify(run.error)}` };
    completed.push(run.id);
    const toolStep = run.steps.find((step: { type: string }) => step.type === 'tool_call');
    if (withTool && (!toolStep || toolStep.is_error))
      return { runId: run.id, failure: `run ${n}: the tool call failed: ${JSON.stringify(toolStep?.output ?? run.steps).slice(0, 300)}` };
    return { runId: run.id, failure: null };
  }

  const undelivered = (runIds: string[]) => {
    const delivered = new Set(
      hosts.receiver.to(HOOK_PATH).map((request) => (JSON.parse(request.body) as { data: { id: string } }).data.id),
    );
    return runIds.filter((id) => !delivered.has(id));
  };

  return {
    async work(runs, { atOnce = 2, webhooks = true, maxFailures = Infinity, everyMs = 0 } = {}) {
      const answered: AnsweredRun[] = [];
      const failures: string[] = [];
      const completed: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: atOnce }, async () => {
          for (let n = next++; n < runs && failures.length < maxFailures; n = next++) {
            let outcome: RunOutcome = { failure: null };
            const sentAtMs = Date.now();
            const ms = await timed(async () => {
              outcome = await oneRun(n, completed).catch((err: Error) => ({ failure: `run ${n}: ${err.message}` }));
            });
            if (outcome.failure) failures.push(outcome.failure);
            else answered.push({ runId: outcome.runId!, sentAtMs, ms });
            const early = sentAtMs + everyMs - Date.now();
            if (early > 0) await setTimeout(early);
          }
        }),
      );
      if (webhooks) {
        const missing = await eventually(
          () => {
            if (undelivered(completed).length > 0) throw new Error('webhooks missing');
            return [];
          },
          { timeoutMs: DELIVERY_DEADLINE_MS },
        ).catch(() => undelivered(completed));
        if (missing.length > 0)
          failures.push(`no run.completed webhook within ${DELIVERY_DEADLINE_MS} ms for ${missing.length} of ${completed.length} runs`);
      }
      return { answered, failures };
    },
  };
}
