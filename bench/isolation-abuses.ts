/** The hostile tenant's abuses, by name, as the isolation benchmark measures them one by one and then all at once. */
import type { Battleground } from '../test/hostile/battleground.js';
import type { Attack } from '../test/hostile/attacks/attack.js';
import { hugeRunLists, openStreams, queueBehindSlowRun } from '../test/hostile/attacks/run-abuse.js';
import { floodingMcpListing, hangingHost, poisonedPattern, silentDns } from '../test/hostile/attacks/tool-abuse.js';

type Abuse = (ground: Battleground) => Promise<Attack<unknown>>;

// The pattern last: should it still hold the worker, nothing after it would measure anything.
export const ABUSES: [string, Abuse][] = [
  ['100 runs of 1 MiB tool outputs listed', hugeRunLists],
  ['300 open event streams', (ground) => openStreams(ground, 300)],
  ['100 runs queued behind a slow one', (ground) => queueBehindSlowRun(ground, 100)],
  ['tool host whose DNS never answers', silentDns],
  ['150 tool calls to a host that never answers', hangingHost],
  ['MCP listing of 40 MiB', floodingMcpListing],
  ['backtracking tool pattern', poisonedPattern],
];
