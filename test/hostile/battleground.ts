/**
 * Two tenants on one platform, and the remote hosts they reach: a tool server, a webhook receiver, an MCP
 * server whose listing floods, and the DNS server the platform's outbound lookups go to, which answers for
 * the steady tenant's hosts and never for the hostile tenant's. The hostile-tenant suite and the isolation
 * benchmark build the same ground; each starts the platform its own way.
 */
import type { Queryable } from '../../records/db.js';
import type { ApiClient } from '../support/client.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { startMcpFloodServer, type McpFloodServer } from '../support/mcp-flood-server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * The steady tenant reaches its tool and webhook hosts by name, so that each call waits for a lookup as the
 * hostile tenant's do; `localhost`, which the test DNS server answers as the system resolver does. The
 * hostile tenant's host is one no name server ever answers for.
 */
export const STEADY_HOST = 'localhost';
export const SILENT_HOST = 'tools.silent.test';

export interface RemoteHosts {
  tools: TestToolServer;
  receiver: WebhookReceiver;
  mcpFlood: McpFloodServer;
  dns: TestDnsServer;
  /** The tool server and the receiver by their names (resolved by `dns`). */
  steadyToolUrl: string;
  steadyHookUrl: string;
  close(): Promise<void>;
}

/**
 * Pages of 2 MiB (four tools with 512 KiB descriptions), 20 of them: what a server answers within the
 * per-response limit, page after page, to make every run that lists it carry 40 MiB of tools.
 */
export const FLOOD = { pages: 20, toolsPerPage: 4, descriptionBytes: 512 * 1024 };

export async function startRemoteHosts(): Promise<RemoteHosts> {
  const [tools, receiver, mcpFlood] = await Promise.all([startToolServer(), startWebhookReceiver(), startMcpFloodServer(FLOOD)]);
  // It answers only for the names it is given: no query for SILENT_HOST is ever answered.
  const dns = await startDnsServer({ [STEADY_HOST]: '127.0.0.1' });
  const portOf = (url: string) => new URL(url).port;
  return {
    tools,
    receiver,
    mcpFlood,
    dns,
    steadyToolUrl: `http://${STEADY_HOST}:${portOf(tools.url)}`,
    steadyHookUrl: `http://${STEADY_HOST}:${portOf(receiver.url)}`,
    async close() {
      await Promise.all([tools.close(), receiver.close(), mcpFlood.close(), dns.close()]);
    },
  };
}

/** The platform as both tenants reach it. */
export interface Battleground {
  apiUrl: string;
  /** The platform's database, for seeding records too slow to make through runs. */
  db: Queryable;
  /** The model every agent of both tenants runs on (a loopback server answering with `promptedReplies`). */
  model: string;
  hosts: RemoteHosts;
  /** Each tenant's admin key. */
  hostile: ApiClient;
  steady: ApiClient;
}
