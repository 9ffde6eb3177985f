/**
 * The webhooks benchmark: how fast recorded events reach a receiver. 500 `file.deleted` events are recorded
 * in one statement (as the outbox would receive them) for a project with one endpoint subscribed to them;
 * the figure is the time from that commit to the receiver's 500th signed request: the dispatcher's fan-out,
 * its claims, the signed POST, and each attempt's log row. The baseline is the same number of signed POSTs of
 * the same bodies made straight from this process, 16 at a time. Then events are recorded one at a time, each
 * once the last arrived: from an event's commit to its first attempt, as a quiet endpoint sees it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { newId } from '../records/ids.js';
import { postSigned } from '../workflows/webhooks/send.js';
import { cpuMs } from './proc.js';

export interface WebhookSettings {
  events: number;
  /** Events recorded one at a time afterwards, for the wait from an event's commit to its first attempt. */
  singles: number;
  /** Signed POSTs in flight at once in the baseline. */
  baselineConcurrency: number;
}

export interface DeliveryFigures {
  deliveries: number;
  seconds: number;
  perSecond: number;
}

export interface WebhookFigures {
  baseline: DeliveryFigures;
  agentplane: DeliveryFigures & { workerCpuMsPerDelivery: number; firstAttemptMs: { p50: number; max: number } };
  ratio: number;
}

export interface WebhookTarget {
  apiUrl: string;
  adminKey: string;
  databaseUrl: string;
  workerPid: number;
}

const DELIVERY_TIMEOUT_MS = 300_000;

/** A receiver that answers 204 and counts; `until(n)` resolves when n requests have arrived. */
async function startReceiver(): Promise<{ url: string; server: Server; until(n: number): Promise<void>; reset(): void }> {
  let count = 0;
  let waiting: { n: number; resolve: () => void } | null = null;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(204).end();
      count++;
      if (waiting && count >= waiting.n) waiting.resolve();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    until: (n) => (count >= n ? Promise.resolve() : new Promise((resolve) => (waiting = { n, resolve }))),
    reset: () => {
      count = 0;
      waiting = null;
    },
  };
}

async function api(target: WebhookTarget, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${target.apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${target.adminKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = await response.json();
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(parsed)}`);
  return parsed;
}

function bodyOf(eventId: string): string {
  return JSON.stringify({
    id: eventId,
    object: 'event',
    type: 'file.deleted',
    created_at: Math.floor(Date.now() / 1000),
    data: { id: newId('file'), object: 'file' },
  });
}

export async function measureWebhooks(target: WebhookTarget, settings: WebhookSettings): Promise<WebhookFigures> {
  const receiver = await startReceiver();
  const db = new pg.Client({ connectionString: target.databaseUrl });
  await db.connect();
  try {
    const endpoint = await api(target, 'POST', '/v1/webhooks', { url: `${receiver.url}/hook`, event_types: ['file.deleted'] });
    const { rows } = await db.query<{ project_id: string }>('SELECT project_id FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    const projectId = rows[0]!.project_id;

    // Baseline: the same POSTs, signed the same way, made straight from here.
    const ids = Array.from({ length: settings.events }, () => newId('evt'));
    let next = 0;
    const baselineStarted = performance.now();
    await Promise.all(
      Array.from({ length: settings.baselineConcurrency }, async () => {
        while (next < ids.length) {
          const id = ids[next++]!;
          const sent = await postSigned({
            projectId: 'proj_bench',
            url: `${receiver.url}/hook`,
            eventId: id,
            body: bodyOf(id),
            secrets: [endpoint.secret],
            allowPrivate: true,
          });
          if (!sent.delivered) throw new Error(`the baseline POST failed: ${sent.error}`);
        }
      }),
    );
    const baselineSeconds = (performance.now() - baselineStarted) / 1000;
    receiver.reset();

    // A warm-up delivery, so that the workflow code is loaded and the dispatcher listening.
    const arrived = receiver.until(1);
    await db.query(`INSERT INTO events (id, project_id, type, data) VALUES ($1, $2, 'file.deleted', $3)`, [
      newId('evt'),
      projectId,
      { object: 'file', id: newId('file') },
    ]);
    await arrived;
    receiver.reset();

    const batch = Array.from({ length: settings.events }, () => newId('evt'));
    const all = receiver.until(settings.events);
    const workerCpuBefore = cpuMs(target.workerPid);
    const started = performance.now();
    await db.query(
      `INSERT INTO events (id, project_id, type, data)
       SELECT id, $2, 'file.deleted', jsonb_build_object('object', 'file', 'id', 'file_' || md5(id)) FROM unnest($1::text[]) AS id`,
      [batch, projectId],
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      all,
      new Promise(
        (_, reject) =>
          (timer = setTimeout(
            () => reject(new Error(`the ${settings.events} deliveries did not all arrive within ${DELIVERY_TIMEOUT_MS / 1000} s`)),
            DELIVERY_TIMEOUT_MS,
          )),
      ),
    ]).finally(() => clearTimeout(timer));
    const seconds = (performance.now() - started) / 1000;
    const workerCpuMs = cpuMs(target.workerPid) - workerCpuBefore;

    const waits: number[] = [];
    for (let i = 0; i < settings.singles; i++) {
      receiver.reset();
      const arrivedOne = receiver.until(1);
      const committed = performance.now();
      await db.query(`INSERT INTO events (id, project_id, type, data) VALUES ($1, $2, 'file.deleted', $3)`, [
        newId('evt'),
        projectId,
        { object: 'file', id: newId('file') },
      ]);
      await arrivedOne;
      waits.push(performance.now() - committed);
    }
    waits.sort((a, b) => a - b);
    const round = (n: number) => Math.round(n * 100) / 100;
    const baseline = { deliveries: settings.events, seconds: round(baselineSeconds), perSecond: round(settings.events / baselineSeconds) };
    const agentplane = {
      deliveries: settings.events,
      seconds: round(seconds),
      perSecond: round(settings.events / seconds),
      workerCpuMsPerDelivery: round(workerCpuMs / settings.events),
      firstAttemptMs: { p50: round(waits[Math.floor(waits.length / 2)]!), max: round(waits[waits.length - 1]!) },
    };
    return { baseline, agentplane, ratio: round(agentplane.perSecond / baseline.perSecond) };
  } finally {
    await db.end();
    await new Promise((resolve) => receiver.server.close(resolve));
  }
}
