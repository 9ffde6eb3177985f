/**
 * The hostile tenant's abuse of the tools its runs call: an argument schema with a catastrophic pattern, a
 * tool host whose name servers never answer, and an MCP server whose listing floods.
 */
import { eventually } from '../../support/eventually.js';
import { ordering } from '../../support/model-servers/prompted.js';
import { SILENT_HOST, type Battleground } from '../battleground.js';
import { cancelled, createdAgent, ranRun, repeatedly, startedRun, type Attack, type RunSeen } from './attack.js';

/** A backtracking engine takes hours to find that this does not match `^(a+)+$`. */
export const POISONED_ARGUMENT = `${'a'.repeat(40)}!`;
/** Parallel calls each poisoned run makes of the silent host. */
const SILENT_CALLS_PER_RUN = 20;
const SILENT_RUNS = 3;

/** Runs, two at a time, whose model calls a tool with an argument its schema's pattern backtracks on. */
export async function poisonedPattern(ground: Battleground): Promise<Attack<{ runs: RunSeen[] }>> {
  const agent = await createdAgent(ground.hostile, {
    name: 'poisoned pattern',
    model: ground.model,
    tools: [
      {
        type: 'http',
        name: 'probe',
        url: `${ground.hosts.tools.url}/echo`,
        parameters: { type: 'object', properties: { q: { type: 'string', pattern: '^(a+)+$' } } },
      },
    ],
  });
  const input = ordering({ call: { name: 'probe', arguments: { q: POISONED_ARGUMENT } } });
  const runs = repeatedly(() => ranRun(ground.hostile, agent, input), 2);
  return { stop: async () => ({ runs: await runs.stop() }) };
}

/**
 * Runs whose model calls a tool on a host no name server answers for, many calls at once, under way once
 * the platform's lookups reach the DNS server.
 */
export async function silentDns(ground: Battleground): Promise<Attack<{ queries: number }>> {
  const agent = await createdAgent(ground.hostile, {
    name: 'silent host',
    model: ground.model,
    max_steps: 50,
    tools: [{ type: 'http', name: 'slow', url: `http://${SILENT_HOST}/` }],
  });
  const input = ordering({ call: { name: 'slow', arguments: {}, times: SILENT_CALLS_PER_RUN } });
  const runIds: string[] = [];
  for (let i = 0; i < SILENT_RUNS; i++) runIds.push(await startedRun(ground.hostile, agent, input));
  await eventually(
    () => {
      if (!ground.hosts.dns.asked.includes(SILENT_HOST)) throw new Error(`no query for ${SILENT_HOST} reached it`);
    },
    { timeoutMs: 20_000, message: "the platform's lookups did not reach the test DNS server" },
  );
  return {
    async stop() {
      await cancelled(ground.hostile, runIds);
      return { queries: ground.hosts.dns.asked.filter((name) => name === SILENT_HOST).length };
    },
  };
}

/** Runs, one after another, of an agent whose MCP server lists 40 MiB of tools. */
export async function floodingMcpListing(ground: Battleground): Promise<Attack<{ runs: RunSeen[] }>> {
  const agent = await createdAgent(ground.hostile, {
    name: 'flooding listing',
    model: ground.model,
    tools: [{ type: 'mcp', server_label: 'flood', server_url: ground.hosts.mcpFlood.url }],
  });
  const runs = repeatedly(() => ranRun(ground.hostile, agent, 'Use your tools.'));
  return { stop: async () => ({ runs: await runs.stop() }) };
}
