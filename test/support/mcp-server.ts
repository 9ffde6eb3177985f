/**
 * A remote MCP server on loopback, built with the official SDK (streamable HTTP), with a few tools to
 * call: `add`, `fail` (answers isError), `picture` (an image), `whoami` (the Authorization header it was
 * sent), `flood` (5 MB of text) and `wait` (answers only when the test releases it), and as many more
 * tools as a test asks for (`extra_<n>`, with descriptions of the length it asks for); `nested`, not listed,
 * answers with structured content as deep as its `depth` argument.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

export interface TestMcpServer {
  url: string;
  /** Requests received: the JSON-RPC method of each POST, else the HTTP method. */
  methods: string[];
  /** Calls of `wait` under way; each resolves its call when invoked. */
  waiting: (() => void)[];
  /** Sessions not yet ended by their client (with `sessions`). */
  readonly sessions: number;
  close(): Promise<void>;
}

const PICTURE = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');

/**
 * Tools listed beyond the usual ones: `count` of them, each described in `descriptionChars` characters, or as
 * `description`; with `argumentDescription`, each takes an argument `q` so described.
 */
export interface ExtraTools {
  count: number;
  descriptionChars?: number;
  description?: string;
  argumentDescription?: string;
}

function toolServer(waiting: (() => void)[], extra: ExtraTools): McpServer {
  const server = new McpServer({ name: 'agentplane-test-tools', version: '1.0.0' });
  for (let i = 0; i < extra.count; i++) {
    const description = extra.description ?? 'd'.repeat(extra.descriptionChars ?? 16);
    const inputSchema = extra.argumentDescription === undefined ? undefined : { q: z.string().describe(extra.argumentDescription) };
    server.registerTool(`extra_${i}`, { description, inputSchema }, async () => ({
      content: [{ type: 'text', text: `extra ${i}` }],
    }));
  }
  server.registerTool('add', { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }));
  server.registerTool('fail', { description: 'Always fails.' }, async () => ({
    content: [{ type: 'text', text: 'the tool failed on purpose' }],
    isError: true,
  }));
  server.registerTool('picture', { description: 'A tiny picture and its caption.' }, async () => ({
    content: [
      { type: 'text', text: 'a picture:' },
      { type: 'image', data: PICTURE, mimeType: 'image/png' },
    ],
  }));
  server.registerTool('whoami', { description: 'Says which credentials it was sent.' }, async (extra) => ({
    content: [{ type: 'text', text: String(extra.requestInfo?.headers.authorization ?? 'anonymous') }],
  }));
  server.registerTool('flood', { description: 'Answers with 5 MB of text.' }, async () => ({
    content: [{ type: 'text', text: 'x'.repeat(5 * 1024 * 1024) }],
  }));
  server.registerTool('wait', { description: 'Answers when released.' }, async () => {
    await new Promise<void>((resolve) => waiting.push(resolve));
    return { content: [{ type: 'text', text: 'released' }] };
  });
  return server;
}

type CallMessage = { id?: number; method?: string; params?: { name?: string; arguments?: { depth?: number } } };

/**
 * `nested`, a tool answered without the SDK, which could not write it: structured content (no text) whose
 * arrays nest `depth` levels inside its object.
 */
function answerNested(res: ServerResponse, message: CallMessage): void {
  const depth = message.params?.arguments?.depth ?? 1;
  const content = `{"levels":${'['.repeat(depth)}${']'.repeat(depth)}}`;
  const body = `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[],"structuredContent":${content}}}`;
  res.writeHead(200, { 'content-type': 'application/json' }).end(body);
}

/**
 * Stateless by default (JSON answers, a server per request); with `sessions`, a server keeps a session per
 * client (answers as event streams, a GET stream for server messages, DELETE to end the session).
 */
export async function startMcpServer({
  sessions = false,
  extraTools = { count: 0 },
}: { sessions?: boolean; extraTools?: ExtraTools } = {}): Promise<TestMcpServer> {
  const methods: string[] = [];
  const waiting: (() => void)[] = [];
  const open = new Map<string, StreamableHTTPServerTransport>();
  const http: Server = createServer(async (req, res) => {
    if (req.url !== '/mcp' || (!sessions && req.method !== 'POST')) {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    let message: CallMessage | undefined;
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as CallMessage;
      if (message.method) methods.push(message.method);
      if (message.method === 'tools/call' && message.params?.name === 'nested') return answerNested(res, message);
    } else methods.push(req.method ?? '');
    const sessionId = req.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? open.get(sessionId) : undefined;
    if (existing) return existing.handleRequest(req, res, message);
    const server = toolServer(waiting, extraTools);
    const transport = new StreamableHTTPServerTransport(
      sessions
        ? {
            sessionIdGenerator: randomUUID,
            onsessioninitialized: (id) => void open.set(id, transport),
            onsessionclosed: (id) => void open.delete(id),
          }
        : { sessionIdGenerator: undefined, enableJsonResponse: true },
    );
    if (!sessions) {
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
    }
    await server.connect(transport);
    await transport.handleRequest(req, res, message);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    methods,
    waiting,
    get sessions() {
      return open.size;
    },
    close: () =>
      new Promise((resolve) => {
        waiting.splice(0).forEach((release) => release());
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
