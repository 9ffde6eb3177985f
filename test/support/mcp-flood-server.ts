/**
 * A remote MCP server (the official SDK's low-level server, streamable HTTP, stateless) whose tool listing
 * is as large as a hostile server makes it: `pages` pages of `toolsPerPage` tools, each with a description
 * of `descriptionBytes` characters, every page but the last naming a next cursor.
 */
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export interface FloodListing {
  pages: number;
  toolsPerPage: number;
  descriptionBytes: number;
}

export interface McpFloodServer {
  url: string;
  /** `tools/list` requests received. */
  readonly listings: number;
  close(): Promise<void>;
}

function floodingServer(listing: FloodListing, counted: () => void): Server {
  const server = new Server({ name: 'agentplane-test-flood', version: '1.0.0' }, { capabilities: { tools: {} } });
  const description = 'd'.repeat(listing.descriptionBytes);
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    counted();
    const page = Number(request.params?.cursor ?? 0);
    const tools = Array.from({ length: listing.toolsPerPage }, (_, i) => ({
      name: `tool_${page}_${i}`,
      description,
      inputSchema: { type: 'object' as const, properties: {} },
    }));
    return page + 1 < listing.pages ? { tools, nextCursor: String(page + 1) } : { tools };
  });
  return server;
}

export async function startMcpFloodServer(listing: FloodListing): Promise<McpFloodServer> {
  let listings = 0;
  const http: HttpServer = createServer(async (req, res) => {
    if (req.url !== '/mcp' || req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const message: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const server = floodingServer(listing, () => listings++);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, message);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get listings() {
      return listings;
    },
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
