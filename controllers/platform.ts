/**
 * The platform, as the controller reaches it: the public HTTP API through the typed client, every request
 * marked as coming from Kubernetes (the API refuses changes to managed records without it). Failures come
 * back as one of three errors: the API could not be reached or could not answer (retry later), it refused
 * the controller's key (the operator must give it a valid one), or it refused what was asked (the
 * resource's spec must change).
 */
import { createAgentplaneClient, type AgentplaneClient } from '../client/agentplane.js';
import type { ApiKeySource } from './api-key.js';
import type { components } from '../api/generated/openapi.js';
import { traceHeaders } from '../tracing/context.js';

export type Agent = components['schemas']['Agent'];
export type Network = components['schemas']['Network'];
export type AgentBody = components['schemas']['CreateAgentRequest'];
export type NetworkBody = components['schemas']['CreateNetworkRequest'];
export type ManagedResource = components['schemas']['ManagedResource'];
export type Schedule = components['schemas']['Schedule'];
export type ScheduleBody = components['schemas']['CreateScheduleRequest'];
export type ScheduleChange = components['schemas']['UpdateScheduleRequest'];

/** A resource declares at most this many schedules (the CRDs' maxItems), so one page holds them all. */
const SCHEDULES_PER_RESOURCE = 100;

/** Unreachable, 5xx or 429: nothing is wrong with the request; try again later. */
export class PlatformUnavailable extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** A 4xx: the API refused the request, and says why. */
export class PlatformRejected extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** 401 or 403: the controller's key is unknown, revoked or lacks a scope; no spec change helps. */
export class PlatformRefusedKey extends PlatformRejected {}

const REQUEST_TIMEOUT_MS = 15_000;

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

async function send<T>(what: string, request: () => Promise<Answer<T>>): Promise<Answer<T>> {
  try {
    return await request();
  } catch (err) {
    throw new PlatformUnavailable(`${what}: the platform API did not answer (${(err as Error).message}).`);
  }
}

async function call<T>(what: string, request: () => Promise<Answer<T>>, key: ApiKeySource, tolerate: number[] = []): Promise<T | null> {
  let answer = await send(what, request);
  // A refused key may have been rotated: read it again, and ask once more with the new one.
  if ((answer.response.status === 401 || answer.response.status === 403) && (await key.reread())) answer = await send(what, request);
  const { status } = answer.response;
  if (answer.data !== undefined && status < 300) return answer.data;
  if (tolerate.includes(status)) return null;
  const error = (answer.error as { error?: { code?: string; message?: string } } | undefined)?.error;
  const message = `${what}: the platform API answered ${status}${error?.message ? `: ${error.message}` : ''}`;
  if (status === 401 || status === 403) {
    throw new PlatformRefusedKey(
      `${message}. The platform refuses the controller's API key; put a valid key (scopes agents:read and agents:write, and schedules:read and schedules:write for declared schedules) in ${key.origin}: the controller reads it again by itself.`,
      status,
      error?.code,
    );
  }
  if (status === 429 || status >= 500) {
    const retryAfter = Number(answer.response.headers.get('retry-after'));
    throw new PlatformUnavailable(message, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined);
  }
  throw new PlatformRejected(message, status, error?.code);
}

export class Platform {
  private readonly client: AgentplaneClient;

  constructor(
    baseUrl: string,
    private readonly key: ApiKeySource,
  ) {
    this.client = createAgentplaneClient({
      baseUrl,
      middleware: [
        {
          onRequest: ({ request }) => {
            request.headers.set('authorization', `Bearer ${key.current}`);
            request.headers.set('agentplane-managed-by', 'kubernetes');
            for (const [name, value] of Object.entries(traceHeaders())) request.headers.set(name, value);
            return new Request(request, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
          },
        },
      ],
    });
  }

  getAgent(id: string): Promise<Agent | null> {
    return call(`GET /v1/agents/${id}`, () => this.client.GET('/v1/agents/{id}', { params: { path: { id } } }), this.key, [404]);
  }

  async findAgent(uid: string): Promise<Agent | null> {
    const page = await call(
      'GET /v1/agents',
      () => this.client.GET('/v1/agents', { params: { query: { managed_uid: uid, limit: 1 } } }),
      this.key,
    );
    return page?.data[0] ?? null;
  }

  createAgent(body: AgentBody): Promise<Agent | null> {
    return call('POST /v1/agents', () => this.client.POST('/v1/agents', { body }), this.key);
  }

  updateAgent(id: string, body: Omit<AgentBody, 'managed_by' | 'managed_resource'>): Promise<Agent | null> {
    return call(`PATCH /v1/agents/${id}`, () => this.client.PATCH('/v1/agents/{id}', { params: { path: { id } }, body }), this.key, [404]);
  }

  async deleteAgent(id: string): Promise<void> {
    await call(`DELETE /v1/agents/${id}`, () => this.client.DELETE('/v1/agents/{id}', { params: { path: { id } } }), this.key, [404]);
  }

  getNetwork(id: string): Promise<Network | null> {
    return call(`GET /v1/networks/${id}`, () => this.client.GET('/v1/networks/{id}', { params: { path: { id } } }), this.key, [404]);
  }

  async findNetwork(uid: string): Promise<Network | null> {
    const page = await call(
      'GET /v1/networks',
      () => this.client.GET('/v1/networks', { params: { query: { managed_uid: uid, limit: 1 } } }),
      this.key,
    );
    return page?.data[0] ?? null;
  }

  createNetwork(body: NetworkBody): Promise<Network | null> {
    return call('POST /v1/networks', () => this.client.POST('/v1/networks', { body }), this.key);
  }

  updateNetwork(id: string, body: Omit<NetworkBody, 'managed_by' | 'managed_resource'>): Promise<Network | null> {
    return call(
      `PATCH /v1/networks/${id}`,
      () => this.client.PATCH('/v1/networks/{id}', { params: { path: { id } }, body }),
      this.key,
      [404],
    );
  }

  /** The schedules the resource with this uid manages. */
  async managedSchedules(uid: string): Promise<Schedule[]> {
    const page = await call(
      'GET /v1/schedules',
      () => this.client.GET('/v1/schedules', { params: { query: { managed_uid: uid, limit: SCHEDULES_PER_RESOURCE } } }),
      this.key,
    );
    return page?.data ?? [];
  }

  createSchedule(body: ScheduleBody): Promise<Schedule | null> {
    return call('POST /v1/schedules', () => this.client.POST('/v1/schedules', { body }), this.key);
  }

  updateSchedule(id: string, body: ScheduleChange): Promise<Schedule | null> {
    return call(
      `PATCH /v1/schedules/${id}`,
      () => this.client.PATCH('/v1/schedules/{id}', { params: { path: { id } }, body }),
      this.key,
      [404],
    );
  }

  async deleteSchedule(id: string): Promise<void> {
    await call(`DELETE /v1/schedules/${id}`, () => this.client.DELETE('/v1/schedules/{id}', { params: { path: { id } } }), this.key, [404]);
  }

  async deleteNetwork(id: string): Promise<void> {
    await call(`DELETE /v1/networks/${id}`, () => this.client.DELETE('/v1/networks/{id}', { params: { path: { id } } }), this.key, [404]);
  }
}
