/**
 * The hostile tenant of the isolation benchmark as a process of its own, run at the lowest CPU priority: its
 * client and the MCP server it floods the platform from stand for machines of its own, which on a real
 * deployment take no CPU from the platform's. What it does to the platform is the same abuse as in the
 * hostile-tenant suite (test/hostile/attacks); the benchmark tells it over IPC which abuse to begin and end.
 */
import { createDb } from '../records/db.js';
import { createLogger } from '../cli/runtime.js';
import { ApiClient } from '../test/support/client.js';
import { startMcpFloodServer } from '../test/support/mcp-flood-server.js';
import { FLOOD, type Battleground, type RemoteHosts } from '../test/hostile/battleground.js';
import type { Attack } from '../test/hostile/attacks/attack.js';
import { ABUSES } from './isolation-abuses.js';

/** What the benchmark sends: where the platform is, and which abuse to begin or end. */
export type HostileCommand =
  | { type: 'begin'; apiUrl: string; key: string; model: string; databaseUrl: string; toolsUrl: string }
  | { type: 'start'; name: string }
  | { type: 'stop'; name: string }
  | { type: 'end' }
  /** The names the benchmark's DNS server has been asked, for the abuse that checks its lookups reach it; not answered. */
  | { type: 'dns'; asked: string[] };

/** What it answers, once per command. */
export type HostileAnswer = { type: 'done'; error?: string };

const send = (answer: HostileAnswer): Promise<void> =>
  new Promise((resolve) => process.send!(answer, undefined, undefined, () => resolve()));

let ground: Battleground | undefined;
let closeFlood: (() => Promise<void>) | undefined;
let closeDb: (() => Promise<void>) | undefined;
const attacks = new Map<string, Attack<unknown>>();

async function handle(command: HostileCommand): Promise<void> {
  switch (command.type) {
    case 'begin': {
      const flood = await startMcpFloodServer(FLOOD);
      const db = createDb(command.databaseUrl, { max: 2, log: createLogger('warn') });
      closeFlood = () => flood.close();
      closeDb = () => db.end();
      const hosts = { tools: { url: command.toolsUrl }, mcpFlood: flood, dns: { asked: [] as string[] } } as unknown as RemoteHosts;
      const hostile = new ApiClient(command.apiUrl, command.key);
      // No abuse reads the steady tenant, which is the benchmark's own: the field holds the hostile client.
      ground = { apiUrl: command.apiUrl, db, model: command.model, hosts, hostile, steady: hostile };
      return;
    }
    case 'start': {
      const abuse = ABUSES.find(([name]) => name === command.name)?.[1];
      if (!abuse || !ground) throw new Error(`no abuse named ${command.name}`);
      attacks.set(command.name, await abuse(ground));
      return;
    }
    case 'stop': {
      const attack = attacks.get(command.name);
      attacks.delete(command.name);
      await attack?.stop();
      return;
    }
    case 'end':
      await closeFlood?.();
      await closeDb?.();
      return;
  }
}

// One command at a time, in order.
let queue = Promise.resolve();
process.on('message', (command: HostileCommand) => {
  if (command.type === 'dns') {
    ground?.hosts.dns.asked.splice(0, Infinity, ...command.asked);
    return;
  }
  queue = queue.then(() =>
    handle(command).then(
      () => send({ type: 'done' }),
      (err: Error) => send({ type: 'done', error: err.message }),
    ),
  );
  // Its last answer sent, it lets go of the channel, and so ends.
  if (command.type === 'end') void queue.then(() => process.disconnect());
});
