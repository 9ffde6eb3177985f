import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { newTenant, startTestApi, type Tenant, type TestApi } from '../support/api.js';
import { createAgent } from '../support/agents.js';
import { isolatedNamespace } from '../support/services.js';
import { eventually, withinDeadline } from '../support/eventually.js';
import type { ApiClient } from '../support/client.js';
import { testLog } from '../support/services.js';
import { RunEventFeed } from '../../records/run-event-feed.js';
import { startPausableProxy } from '../support/pausable-proxy.js';
import { appendRunEvent } from '../../records/run-events.js';

/** A stream opened with a raw request, so that the test decides when (and whether) its body is read. */
interface OpenStream {
  request: ClientRequest;
  response: IncomingMessage;
  close(): void;
}

function openStream(api: TestApi, client: ApiClient, runId: string): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${api.url}/v1/runs/${runId}/events`,
      { headers: { authorization: `Bearer ${client.key}` } },
      (response) => {
        response.pause();
        resolve({ request, response, close: () => request.destroy() });
      },
    );
    request.on('error', reject);
    request.end();
  });
}

/** A stream that is open (200), once the process has a slot for it: streams closed just before free theirs soon after. */
function holdStream(api: TestApi, client: ApiClient, runId: string): Promise<OpenStream> {
  return eventually(async () => {
    const stream = await openStream(api, client, runId);
    if (stream.response.statusCode === 200) return stream;
    stream.close();
    throw new Error(`answered ${stream.response.statusCode}`);
  });
}

/** The answer to a stream that should be refused: its status and error body (a stream that opened is closed at once). */
async function refusal(
  api: TestApi,
  client: ApiClient,
  runId: string,
): Promise<{ status: number; retryAfter: number; error?: { code: string; type: string } }> {
  const stream = await openStream(api, client, runId);
  const status = stream.response.statusCode ?? 0;
  const retryAfter = Number(stream.response.headers['retry-after']);
  if (status === 200) {
    stream.close();
    return { status, retryAfter };
  }
  let text = '';
  for await (const chunk of stream.response as AsyncIterable<Buffer>) text += chunk.toString();
  return { status, retryAfter, error: (JSON.parse(text) as { error: { code: string; type: string } }).error };
}

/** Reads what is left of a response and says how many bytes it held and whether it held `text`. */
async function readRest(response: IncomingMessage, text: string): Promise<{ bytes: number; holds: boolean }> {
  let bytes = 0;
  let tail = '';
  let holds = false;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      const seen = tail + chunk.toString('latin1');
      holds ||= seen.includes(text);
      tail = seen.slice(-text.length);
    }
  } catch {
    // The server cut the connection: what arrived before is what counts.
  }
  return { bytes, holds };
}

describe('run event streams under load', function () {
  this.timeout(120_000);
  let api: TestApi;
  let tenant: Tenant;
  let agent: { id: string };
  // Nothing polls this API's namespace, so its runs stay queued: runs that never start.
  let queued: { id: string };

  before(async () => {
    api = await startTestApi({
      worker: false,
      namespace: await isolatedNamespace('event-streams'),
      eventStreamLimits: { perKey: 1, perProcess: 2, stallSeconds: 1 },
    });
    tenant = await newTenant(api, 'event-streams');
    agent = await createAgent(tenant.admin, { name: 'streamed' });
    queued = (await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'wait', wait: false })).body;
    assert.equal(queued.id.startsWith('run_'), true, JSON.stringify(queued));
  });

  after(async () => {
    await api?.stop();
  });

  it("answers 429 with Retry-After past a key's cap and the process's, in the one error shape, while another key still streams", async () => {
    const [first, second, third] = [
      await tenant.keyWith('agents:read'),
      await tenant.keyWith('agents:read'),
      await tenant.keyWith('agents:read'),
    ];
    const held = await holdStream(api, first, queued.id);
    try {
      const refused = await refusal(api, first, queued.id);
      assert.equal(refused.status, 429);
      assert.equal(refused.error?.code, 'too_many_event_streams');
      assert.equal(refused.error?.type, 'rate_limit_error');
      assert.ok(refused.retryAfter >= 1, `Retry-After: ${refused.retryAfter}`);

      const other = await openStream(api, second, queued.id);
      assert.equal(other.response.statusCode, 200, 'another key is unaffected');
      try {
        const full = await refusal(api, third, queued.id);
        assert.equal(full.status, 429);
        assert.equal(full.error?.code, 'event_streams_exhausted');
        assert.ok(full.retryAfter >= 1);
      } finally {
        other.close();
      }
      // A closed stream gives its slot back.
      (await holdStream(api, third, queued.id)).close();
    } finally {
      held.close();
    }
  });

  it('refuses a streamed run creation over the cap before creating the run', async () => {
    const runner = await tenant.keyWith('agents:run', 'agents:read');
    const held = await holdStream(api, runner, queued.id);
    try {
      const refused = await fetch(`${api.url}/v1/agents/${agent.id}/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${runner.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ input: 'also streamed', stream: true }),
      });
      if (refused.status !== 429) await refused.body?.cancel();
      assert.equal(refused.status, 429);
      assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'too_many_event_streams');
      const runs = await tenant.admin.get(`/v1/agents/${agent.id}/runs`);
      assert.deepEqual(
        runs.body.data.map((r: { id: string }) => r.id),
        [queued.id],
      );
    } finally {
      held.close();
    }
  });

  it('disconnects a client that reads nothing rather than hold the log for it, and frees its slot', async () => {
    const big = (await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'big', wait: false })).body;
    // A finished run whose log holds 40 tool results of 1 MiB each.
    await api.services.db.query(
      `WITH logged AS (
         INSERT INTO run_events (run_id, seq, type, data)
         SELECT $1, 1 + s, 'step.completed', jsonb_build_object('step', s, 'step_type', 'tool_call', 'is_error', false, 'output', repeat('a', 1048576))
         FROM generate_series(1, 40) AS s
       )
       INSERT INTO run_events (run_id, seq, type, data) VALUES ($1, 42, 'run.completed', '{}')`,
      [big.id],
    );
    await api.services.db.query(`UPDATE runs SET status = 'completed', event_seq = 42, completed_at = now() WHERE id = $1`, [big.id]);
    const reader = await tenant.keyWith('agents:read');
    const stalled = await holdStream(api, reader, big.id);
    // The key's one slot comes free once the server gives up on the stalled stream.
    await eventually(
      async () => {
        // Past the end of a finished run's log: a stream that ends at once.
        const probe = await reader.get(`/v1/runs/${big.id}/events?after=42`);
        if (probe.status === 429) throw new Error('the stalled stream is still open');
      },
      { message: 'the stalled stream was not closed' },
    );
    const { bytes, holds } = await readRest(stalled.response, 'event: run.completed');
    assert.equal(holds, false, 'the stream ended before the end of the log');
    assert.ok(bytes < 20 * 1024 * 1024, `the server wrote ${bytes} bytes of a 40 MiB log to a client that read nothing`);
  });

  it('answers 400 naming Last-Event-ID when it is no sequence number, and nothing else', async () => {
    for (const value of ['abc', '1e999', '-1', '12345678901234567890', 'NaN']) {
      const answer = await tenant.admin.request('GET', `/v1/runs/${queued.id}/events`, { headers: { 'last-event-id': value } });
      assert.equal(answer.status, 400, `${value}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error.type, 'invalid_request_error');
      assert.equal(answer.body.error.param, 'Last-Event-ID');
    }
    // An empty one names no event: the stream starts where `after` says.
    const open = new AbortController();
    const empty = await fetch(`${api.url}/v1/runs/${queued.id}/events?after=1`, {
      headers: { authorization: `Bearer ${tenant.admin.key}`, 'last-event-id': '' },
      signal: open.signal,
    });
    assert.equal(empty.status, 200);
    assert.match(empty.headers.get('content-type') ?? '', /^text\/event-stream/);
    open.abort();
  });

  describe('following a run', () => {
    it('reads nothing while a run is quiet and notifications arrive, and wakes when the run logs an event', async () => {
      const quiet = (await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'quiet', wait: false })).body;
      const feed = new RunEventFeed(api.services.db.connectionString, testLog).start();
      try {
        await eventually(() => assert.ok(feed.listening, 'the feed listens'));
        const follower = feed.follow(quiet.id);
        assert.equal(await follower.next(50), false, 'a quiet run: nothing to read');
        const woken = follower.next(60_000);
        await appendRunEvent(api.services.db, quiet.id, 'run.in_progress', {});
        assert.equal(await woken, true);
        follower.close();
      } finally {
        await feed.stop();
      }
    });

    it('stops at once when stopped while its connection to PostgreSQL is still being made', async function () {
      this.timeout(30_000);
      const url = new URL(api.services.db.connectionString);
      const slow = await startPausableProxy(`${url.hostname}:${url.port}`);
      try {
        slow.pause();
        url.host = slow.address;
        const feed = new RunEventFeed(url.toString(), testLog).start();
        const stopped = feed.stop();
        // The connection is made once the network lets it through, after the stop.
        slow.letThrough();
        await withinDeadline(stopped, 10_000, 'the feed did not stop');
        assert.equal(feed.listening, false);
      } finally {
        await slow.stop();
      }
    });

    it('polls the log while notifications do not arrive', async () => {
      const feed = new RunEventFeed(api.services.db.connectionString, testLog);
      const follower = feed.follow(queued.id);
      assert.equal(await follower.next(50), true, 'not listening: every wait is a poll');
      follower.close();
    });
  });
});
