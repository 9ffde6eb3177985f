/**
 * The networks benchmark: what a network run adds per hop. A five-member sequential network run (each hop
 * a child run with one model call), against the same five agents run one after another as plain runs, in
 * the same stack and the same run of the benchmark.
 */
import { BENCH_MODEL, BENCH_REPLY, latencyOf, timed, type LatencyFigures, type RunTarget } from './runs.js';

export const NETWORK_MEMBERS = 5;

export interface NetworkSettings {
  warmups: number;
  samples: number;
}

export interface NetworkFigures {
  members: number;
  /** The five agents run one after another, each waited for. */
  fiveRuns: LatencyFigures;
  /** One sequential network run of the five, waited for. */
  network: LatencyFigures;
  /** (network p50 − five runs' p50) / 5: what the network adds to each hop. */
  perHopOverheadP50Ms: number;
}

async function post(target: RunTarget, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${target.apiUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${target.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) };
}

async function expectCompleted(target: RunTarget, path: string): Promise<void> {
  const answer = await post(target, path, { input: 'What is the answer?' });
  if (answer.status !== 200 || answer.body.status !== 'completed' || answer.body.output?.text !== BENCH_REPLY.join('')) {
    throw new Error(`POST ${path} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 500)}`);
  }
}

export async function measureNetworks(target: RunTarget, settings: NetworkSettings): Promise<NetworkFigures> {
  const members: string[] = [];
  for (let i = 0; i < NETWORK_MEMBERS; i++) {
    const agent = await post(target, '/v1/agents', { name: `member ${i + 1}`, model: BENCH_MODEL, instructions: 'Answer briefly.' });
    if (agent.status !== 201) throw new Error(`POST /v1/agents answered ${agent.status}: ${JSON.stringify(agent.body)}`);
    members.push(agent.body.id);
  }
  const network = await post(target, '/v1/networks', { name: 'bench', members, router: { type: 'sequential' } });
  if (network.status !== 201) throw new Error(`POST /v1/networks answered ${network.status}: ${JSON.stringify(network.body)}`);

  const fiveRuns = async () => {
    for (const id of members) await expectCompleted(target, `/v1/agents/${id}/run`);
  };
  const networkRun = () => expectCompleted(target, `/v1/networks/${network.body.id}/run`);
  for (let i = 0; i < settings.warmups; i++) {
    await fiveRuns();
    await networkRun();
  }
  // Interleaved, so that both see the same machine.
  const direct: number[] = [];
  const networked: number[] = [];
  for (let i = 0; i < settings.samples; i++) {
    direct.push(await timed(fiveRuns));
    networked.push(await timed(networkRun));
  }
  const figures = { members: NETWORK_MEMBERS, fiveRuns: latencyOf(direct), network: latencyOf(networked) };
  return { ...figures, perHopOverheadP50Ms: Math.round(((figures.network.p50Ms - figures.fiveRuns.p50Ms) / NETWORK_MEMBERS) * 10) / 10 };
}
