/**
 * A remote A2A agent on loopback, built with the official SDK's server pieces (request handler, task store,
 * Express handlers for the card and JSON-RPC), speaking A2A 1.0. It answers a message with one artifact,
 * `Answer to: <message>`, and reports the task's cost through Agentplane's cost extension; a message
 * containing `hold` keeps its task working until it is cancelled, and one containing `more input` asks for
 * more input. What it was sent is kept for the test to read; a method's result can be written by the test instead.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Role, TaskState, type AgentCard, type Task } from '@a2a-js/sdk';
import {
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { COST_EXTENSION } from '../../tools/a2a-client.js';

export interface TestA2aAgent {
  /** The card's URL. */
  cardUrl: string;
  /** The JSON-RPC methods received, in order. */
  methods: string[];
  /** The headers of each JSON-RPC request, in the same order. */
  headers: Record<string, string | string[] | undefined>[];
  /** The ids of the messages sent to it. */
  messageIds: string[];
  /** The tasks a client cancelled. */
  cancelled: string[];
  /** The tasks it started. */
  started: string[];
  close(): Promise<void>;
}

/** What each answered task reports it cost (COST_EXTENSION). */
export const REPORTED_COST = { run_id: 'run_remote_0001', cost_usd: '0.0125', input_tokens: 1500, output_tokens: 250 };

function textOf(context: RequestContext): string {
  return context.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

class TestExecutor implements AgentExecutor {
  private readonly holding = new Map<string, () => void>();

  constructor(private readonly agent: Pick<TestA2aAgent, 'cancelled' | 'started'>) {}

  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = context;
    this.agent.started.push(taskId);
    const task: Task = {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [context.userMessage],
      metadata: undefined,
    };
    bus.publish({ kind: 'task', data: task });
    const text = textOf(context);
    if (text.includes('hold')) {
      await new Promise<void>((resolve) => this.holding.set(taskId, resolve));
      bus.finished();
      return;
    }
    if (text.includes('more input')) {
      const question = {
        messageId: `${taskId}-question`,
        contextId,
        taskId,
        role: Role.ROLE_AGENT,
        parts: [{ content: { $case: 'text' as const, value: 'Which city?' }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      };
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, question);
      bus.finished();
      return;
    }
    bus.publish({
      kind: 'artifactUpdate',
      data: {
        taskId,
        contextId,
        artifact: {
          artifactId: 'answer',
          name: 'answer',
          description: '',
          parts: [{ content: { $case: 'text', value: `Answer to: ${text}` }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      },
    });
    this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED, undefined, { [COST_EXTENSION]: REPORTED_COST });
    bus.finished();
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    this.agent.cancelled.push(taskId);
    this.status(bus, taskId, '', TaskState.TASK_STATE_CANCELED);
    this.holding.get(taskId)?.();
    this.holding.delete(taskId);
    bus.finished();
  }

  private status(
    bus: ExecutionEventBus,
    taskId: string,
    contextId: string,
    state: TaskState,
    message?: NonNullable<Task['status']>['message'],
    metadata?: Record<string, unknown>,
  ): void {
    bus.publish({
      kind: 'statusUpdate',
      data: { taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata },
    });
  }

  releaseAll(): void {
    for (const release of this.holding.values()) release();
  }
}

/**
 * `interfaceUrl`: the URL the card names for its JSON-RPC interface, in place of the agent's own. `answers`: the
 * JSON-RPC result of a method (or its JSON text), written here as a server that does not use the SDK could (ids,
 * texts, reports and nesting the SDK would not make).
 */
export async function startA2aAgent(
  options: { interfaceUrl?: string; answers?: Partial<Record<string, (params: unknown) => unknown>> } = {},
): Promise<TestA2aAgent> {
  const app = express();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const agent: TestA2aAgent = {
    cardUrl: `${base}/.well-known/agent-card.json`,
    methods: [],
    headers: [],
    messageIds: [],
    cancelled: [],
    started: [],
    close: async () => {
      executor.releaseAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const card: AgentCard = {
    name: 'Research agent',
    description: 'Answers research questions.',
    supportedInterfaces: [{ url: options.interfaceUrl ?? `${base}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extensions: [{ uri: COST_EXTENSION, description: 'Reports what a task cost.', required: false, params: undefined }],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
  const executor = new TestExecutor(agent);
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a', express.json(), (req, res, next) => {
    const body = req.body as { method?: string; params?: { message?: { messageId?: string; message_id?: string } } };
    agent.methods.push(body.method ?? '');
    agent.headers.push(req.headers);
    const messageId = body.params?.message?.messageId ?? body.params?.message?.message_id;
    if (messageId) agent.messageIds.push(messageId);
    const answer = options.answers?.[body.method ?? ''];
    if (answer) {
      const { id, params } = req.body as { id: unknown; params: unknown };
      const result = answer(params);
      // A string is the result's JSON text as it is, which may nest past what JSON.stringify can write.
      const text = typeof result === 'string' ? result : JSON.stringify(result);
      res.type('json').send(`{"jsonrpc": "2.0", "id": ${JSON.stringify(id)}, "result": ${text}}`);
      return;
    }
    next();
  });
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return agent;
}
