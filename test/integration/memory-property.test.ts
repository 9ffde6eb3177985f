import assert from 'node:assert/strict';
import { startTestApi, newTenant, type TestApi, type Tenant } from '../support/api.js';
import { isolatedNamespace, postgres } from '../support/services.js';
import { eventually } from '../support/eventually.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import { createAgent } from '../support/agents.js';
import type { Queryable } from '../../records/db.js';
import { factsIn, valueKey } from '../../workflows/memory/statements.js';

/** A small seeded generator (mulberry32): the same seed makes the same threads and the same order of deletions. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    pick: <T>(items: T[]): T => items[Math.floor(next() * items.length)]!,
    shuffle: <T>(items: T[]) =>
      items
        .map((i) => [next(), i] as const)
        .sort((a, b) => a[0] - b[0])
        .map(([, i]) => i),
  };
}

// Statements the subjects share: the same fact in several threads, and contradicting ones.
const STATEMENTS = [
  'My name is Ada.',
  'My name is Bo.',
  'I live in Paris.',
  'I moved to Rome.',
  'I live in Oslo.',
  'My email is ada@example.com.',
  'My email is bo@example.com.',
  'I like green tea.',
  "I don't like green tea.",
  'I work at Initech.',
];
const SUBJECTS = ['s1', 's2', 's3'];

interface Stated {
  thread: string;
  subject: string;
  facts: string[];
}

/** What the memories must be, checked in the database after each step (threads and subjects are the project's). */
async function checkInvariants(db: Queryable, projectId: string, live: Stated[], step: string): Promise<void> {
  const unsupported = await db.query(
    `SELECT m.id FROM memories m WHERE m.project_id = $1 AND NOT EXISTS (
       SELECT 1 FROM memory_sources s JOIN thread_messages t ON t.id = s.message_id WHERE s.memory_id = m.id)`,
    [projectId],
  );
  assert.deepEqual(unsupported.rows, [], `${step}: memories without a source`);
  const orphans = await db.query(
    `SELECT s.memory_id FROM memory_sources s WHERE s.project_id = $1 AND NOT EXISTS (SELECT 1 FROM thread_messages t WHERE t.id = s.message_id)`,
    [projectId],
  );
  assert.deepEqual(orphans.rows, [], `${step}: sources citing a message that is gone`);
  const { rows } = await db.query<{ subject_id: string; fact: string; thread_id: string }>(
    `SELECT m.subject_id, m.attribute || '=' || m.value_key AS fact, s.thread_id FROM memories m JOIN memory_sources s ON s.memory_id = m.id
     WHERE m.project_id = $1`,
    [projectId],
  );
  const stored = new Set(rows.map((r) => `${r.subject_id} ${r.fact} ${r.thread_id}`));
  const expected = new Set(live.flatMap((t) => t.facts.map((fact) => `${t.subject} ${fact} ${t.thread}`)));
  assert.deepEqual([...stored].sort(), [...expected].sort(), `${step}: the memories' sources are not exactly what the live threads stated`);
  // One current memory per subject and attribute: the one stated last.
  const current = await db.query<{ subject_id: string; attribute: string; current: number; latest_is_current: boolean }>(
    `SELECT m.subject_id, m.attribute, count(*) FILTER (WHERE m.status = 'current')::int AS current,
            bool_or(m.status = 'current' AND m.id = (
              SELECT m2.id FROM memories m2 JOIN memory_sources s2 ON s2.memory_id = m2.id
              WHERE m2.project_id = m.project_id AND m2.subject_id = m.subject_id AND m2.attribute = m.attribute
              ORDER BY s2.learned_at DESC, s2.message_seq DESC, s2.start_offset DESC, m2.id LIMIT 1)) AS latest_is_current
     FROM memories m WHERE m.project_id = $1 GROUP BY m.subject_id, m.attribute`,
    [projectId],
  );
  for (const row of current.rows) {
    assert.equal(row.current, 1, `${step}: ${row.subject_id}'s ${row.attribute} has ${row.current} current memories`);
    assert.ok(row.latest_is_current, `${step}: ${row.subject_id}'s current ${row.attribute} is not the latest statement`);
  }
}

describe('memory, property: no memory outlives its sources and none with a source is lost', function () {
  this.timeout(240_000);
  const seed = Number(process.env.MEMORY_PROPERTY_SEED ?? Date.now() % 100_000);
  let api: TestApi;
  let openai: OpenAiServer;
  let tenant: Tenant;
  let namespace: string;
  const workers: CliProcess[] = [];

  before(async () => {
    namespace = await isolatedNamespace('memory-property');
    openai = await startOpenAiServer({ models: [] });
    openai.setFallback({ text: ['Noted.'], usage: { input: 5, output: 5 } });
    api = await startTestApi({ worker: false, namespace, modelEnv: { OPENAI_BASE_URL: openai.url } });
    tenant = await newTenant(api, 'memory-property');
  });
  after(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await api?.stop();
    await openai?.stop();
  });

  async function startWorker(): Promise<CliProcess> {
    const worker = runCli('worker', {
      DATABASE_URL: (await postgres()).url,
      TEMPORAL_ADDRESS: api.temporalAddress,
      TEMPORAL_NAMESPACE: namespace,
      AGENTPLANE_BLOB_DIR: api.blobDir,
      OPENAI_BASE_URL: openai.url,
    });
    workers.push(worker);
    return worker;
  }

  const factsOf = (text: string) => factsIn(text).map((f) => `${f.attribute}=${valueKey(f.value)}`);

  /** Waits until the run's statements are memories citing its thread. */
  async function learned(db: Queryable, stated: Stated): Promise<void> {
    await eventually(
      async () => {
        const { rows } = await db.query<{ fact: string }>(
          `SELECT DISTINCT m.attribute || '=' || m.value_key AS fact FROM memories m JOIN memory_sources s ON s.memory_id = m.id
           WHERE s.thread_id = $1`,
          [stated.thread],
        );
        assert.deepEqual(rows.map((r) => r.fact).sort(), [...new Set(stated.facts)].sort());
      },
      { timeoutMs: 60_000, message: `what thread ${stated.thread} stated was not learned (seed ${seed})` },
    );
  }

  it(`deletes threads and subjects in a random order (seed in the message on failure), across a worker killed mid-extraction`, async () => {
    const { db } = await postgres();
    const random = generator(seed);
    let worker = await startWorker();
    const agent = await createAgent(tenant.admin, { memory: { enabled: true } });
    const live: Stated[] = [];

    const runOn = async (thread: string, input: string) => {
      const run = await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input, thread_id: thread });
      assert.equal(run.body.status, 'completed', `${JSON.stringify(run.body.error)} ${worker.output()}`);
    };

    for (let i = 0; i < 7; i++) {
      const subject = random.pick(SUBJECTS);
      const thread = (await tenant.admin.post('/v1/threads', { subject_id: subject })).body.id as string;
      const stated: Stated = { thread, subject, facts: [] };
      for (let turn = 0; turn < 2; turn++) {
        const input = [random.pick(STATEMENTS), random.pick(STATEMENTS)].join(' ');
        await runOn(thread, input);
        stated.facts.push(...factsOf(input));
      }
      await learned(db, stated);
      live.push(stated);
    }
    await checkInvariants(db, tenant.projectId, live, `after ${live.length} threads (seed ${seed})`);

    // A worker killed while it stores a run's memories: the replacement stores them, once.
    const thread = (await tenant.admin.post('/v1/threads', { subject_id: 's1' })).body.id as string;
    const blocker = await db.connect();
    try {
      // The subject's memories held, as a transaction storing them would hold them: the extraction waits for it.
      await blocker.query('BEGIN');
      await blocker.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`memories:${tenant.projectId}:s1`]);
      await runOn(thread, 'My name is Ada. I live in Oslo.');
      await eventually(
        async () => {
          const { rows } = await db.query(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT pg_advisory_xact_lock%' AND pid <> $1`,
            [(await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid],
          );
          assert.equal(rows.length, 1, 'the extraction is not yet waiting to store');
        },
        { timeoutMs: 60_000, message: 'the extraction never reached its transaction' },
      );
      worker.child.kill('SIGKILL');
      assert.equal((await worker.exited).signal, 'SIGKILL');
      await blocker.query('ROLLBACK');
    } finally {
      blocker.release();
    }
    worker = await startWorker();
    const survived: Stated = { thread, subject: 's1', facts: factsOf('My name is Ada. I live in Oslo.') };
    await learned(db, survived);
    live.push(survived);
    const sources = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM memory_sources WHERE thread_id = $1', [thread]);
    assert.equal(sources.rows[0]!.n, 2, 'each statement is one source, however often it was stored');
    await checkInvariants(db, tenant.projectId, live, `after the worker was killed (seed ${seed})`);

    // Then threads and subjects go in a random order, the invariants checked after each.
    const steps = random.shuffle([...live.map((t) => ({ thread: t.thread })), { subject: random.pick(SUBJECTS) }]);
    for (const step of steps) {
      if ('thread' in step) {
        if (!live.some((t) => t.thread === step.thread)) continue;
        const deleted = await tenant.admin.delete(`/v1/threads/${step.thread}`);
        assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
        live.splice(
          live.findIndex((t) => t.thread === step.thread),
          1,
        );
      } else {
        const forgotten = await tenant.admin.delete(`/v1/memories?subject_id=${step.subject}`);
        assert.equal(forgotten.status, 200, JSON.stringify(forgotten.body));
        assert.equal(forgotten.body.removed.threads, live.filter((t) => t.subject === step.subject).length);
        for (let i = live.length - 1; i >= 0; i--) if (live[i]!.subject === step.subject) live.splice(i, 1);
      }
      await checkInvariants(db, tenant.projectId, live, `after deleting ${JSON.stringify(step)} (seed ${seed})`);
    }
    assert.deepEqual(live, []);
    const left = await db.query('SELECT id FROM memories WHERE project_id = $1', [tenant.projectId]);
    assert.deepEqual(left.rows, []);
  });
});
