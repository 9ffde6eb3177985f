/**
 * The approvals benchmark: how soon a tool call waiting for a person is in flight once the decision is made,
 * against how soon a new run's tool call is in flight once the run is asked for (its start and one model call
 * included). Both are timed to the request's arrival at a loopback tool server.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callApi, type BenchTarget } from './stack.js';
import type { LatencyFigures } from './runs.js';
import { ordering } from '../test/support/model-servers/prompted.js';
import { BENCH_MODEL } from './runs.js';

export interface ApprovalSettings {
  warmups: number;
  samples: number;
}

export interface ApprovalFigures {
  /** From `POST /v1/approvals/{id}` to the approved call's request at the tool. */
  decision: LatencyFigures;
  /** From `POST /v1/agents/{id}/run` to its tool call's request at the tool (no approval asked). */
  start: LatencyFigures;
}

/** A tool that notes when each call arrives, by the `Idempotency-Key` the platform gives the call. */
class ArrivalsTool {
  private readonly waiting = new Map<string, (at: number) => void>();
  private readonly arrived = new Map<string, number>();
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<ArrivalsTool> {
    let tool: ArrivalsTool | undefined;
    const server = createServer((req, res) => {
      const at = performance.now();
      const key = String(req.headers['idempotency-key'] ?? '');
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}'));
      tool!.arrive(key, at);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    tool = new ArrivalsTool(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/act`);
    return tool;
  }

  private arrive(key: string, at: number): void {
    this.arrived.set(key, at);
    this.waiting.get(key)?.(at);
  }

  /** When the call of `runId`'s step `step` arrived, waiting for it if it has not yet. */
  arrival(runId: string, step: number): Promise<number> {
    const key = `${runId}-${step}`;
    const known = this.arrived.get(key);
    if (known !== undefined) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the call of ${key} never reached the tool`)), 60_000);
      this.waiting.set(key, (at) => {
        clearTimeout(timer);
        resolve(at);
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function latencies(samples: number[]): LatencyFigures {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { samples: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), meanMs: sorted.reduce((a, b) => a + b, 0) / sorted.length };
}

export async function measureApprovals(target: BenchTarget, settings: ApprovalSettings): Promise<ApprovalFigures> {
  const tool = await ArrivalsTool.start();
  try {
    const api = (path: string, init?: RequestInit) => callApi(`${target.apiUrl}${path}`, target.adminKey, init);
    const agentWith = (approval: Record<string, unknown>) =>
      api('/v1/agents', {
        method: 'POST',
        body: JSON.stringify({
          name: 'approvals bench',
          model: BENCH_MODEL,
          tools: [{ type: 'http', name: 'act', url: tool.url, approval }],
        }),
      });
    const guarded = await agentWith({ mode: 'always' });
    const open = await agentWith({ mode: 'never' });
    const input = ordering({ call: { name: 'act', arguments: { item: 1 } } });
    // The model's tool call is the run's second step (index 1).
    const TOOL_STEP = 1;

    const decisions: number[] = [];
    const starts: number[] = [];
    for (let i = 0; i < settings.warmups + settings.samples; i++) {
      const measured = i >= settings.warmups;
      // A run asked for, to its call in flight.
      const asked = performance.now();
      const started = await api(`/v1/agents/${open.id}/run`, { method: 'POST', body: JSON.stringify({ input, wait: false }) });
      const startLatency = (await tool.arrival(started.id, TOOL_STEP)) - asked;
      // A run waiting on its call's approval, decided, to its call in flight.
      const waiting = await api(`/v1/agents/${guarded.id}/run`, { method: 'POST', body: JSON.stringify({ input }) });
      if (waiting.status !== 'requires_action') throw new Error(`a run that needs approval answered ${waiting.status}`);
      const { data } = await api(`/v1/approvals?run_id=${waiting.id}&status=pending`);
      const decided = performance.now();
      await api(`/v1/approvals/${data[0].id}`, { method: 'POST', body: JSON.stringify({ decision: 'approve' }) });
      const decisionLatency = (await tool.arrival(waiting.id, TOOL_STEP)) - decided;
      if (measured) {
        starts.push(startLatency);
        decisions.push(decisionLatency);
      }
    }
    return { decision: latencies(decisions), start: latencies(starts) };
  } finally {
    await tool.close();
  }
}
