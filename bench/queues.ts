/**
 * The queues benchmark. What a run's turn costs the database every project shares, in a long queue against a short
 * one, in turns: the admission of an `enqueue` run (is a run of its agent ahead of it?) and the wake of the next one
 * as a run ends (which run's turn is it?), with `longQueue` runs waiting against `shortQueue`; and the admission of a
 * run on a thread of `longThreadRuns` ended runs against one of `shortQueue`. A tenant may queue as many runs as
 * its limits let it, and keep a thread for years: neither may make each of its runs cost more.
 *
 * The runs are written straight to the database, copies of one the API ran, each marked as having its workflow
 * (so maintenance starts none of them); they are ended before the benchmark returns.
 */
import { createDb, type Db } from '../records/db.js';
import { newId } from '../records/ids.js';
import { admissionOf, nextQueuedRun, runById, type RunRecord } from '../records/runs.js';
import { nextRunOnThread } from '../records/threads.js';
import { createLogger } from '../cli/runtime.js';
import { callApi, type BenchTarget } from './stack.js';
import { BENCH_MODEL, latencyOf, samplesInTurns, timed, type LatencyFigures } from './runs.js';

export interface QueueSettings {
  warmups: number;
  /** Each measurement's samples on each side. */
  samples: number;
  /** Runs waiting in the long queue. */
  longQueue: number;
  /** Runs waiting in the short queue; and the ended runs of the short thread. */
  shortQueue: number;
  /** Ended runs on the long thread. */
  longThreadRuns: number;
}

/** One measurement on the short side and on the long side, and long p50 ÷ short p50. */
export interface QueueComparison {
  short: LatencyFigures;
  long: LatencyFigures;
  ratio: number;
}

export interface QueueFigures {
  /** The admission of the last run of an `enqueue` queue. */
  admission: QueueComparison;
  /** The next run of a queue whose run in progress has just ended. */
  wake: QueueComparison;
  /** The admission of a queued run on a thread, and the next run of the thread, on a thread of ended runs. */
  threadAdmission: QueueComparison;
  threadWake: QueueComparison;
}

/** Two ways of doing one thing, timed in turns (ms each), the warm-ups left out of the figures. */
async function inTurns(settings: QueueSettings, short: () => Promise<unknown>, long: () => Promise<unknown>): Promise<QueueComparison> {
  const [shorts, longs] = await samplesInTurns(
    settings,
    () => timed(async () => void (await short())),
    () => timed(async () => void (await long())),
  );
  // The ratio of the medians as measured: these take a fraction of a millisecond, finer than the figures' rounding.
  const median = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.floor(ms.length / 2)]!;
  return { short: latencyOf(shorts), long: latencyOf(longs), ratio: median(longs) / median(shorts) };
}

/**
 * `count` copies of `template`, in `status`, created a millisecond apart in the past, each marked as having a workflow;
 * on `threadId` if given. The ids, oldest first.
 */
async function copies(
  db: Db,
  template: string,
  count: number,
  status: 'queued' | 'completed',
  threadId: string | null = null,
): Promise<string[]> {
  const ids = Array.from({ length: count }, () => newId('run'));
  await db.query(
    `INSERT INTO runs SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || jsonb_build_object(
       'id', c.id, 'status', $3::text, 'thread_id', $4::text, 'created_at', now() - make_interval(secs => (cardinality($2::text[]) - c.n) / 1000.0),
       'started_at', NULL, 'workflow_started_at', now(),
       'completed_at', CASE WHEN $3 = 'completed' THEN now() END))).*
     FROM runs r, unnest($2::text[]) WITH ORDINALITY AS c(id, n) WHERE r.id = $1`,
    [template, ids, status, threadId],
  );
  return ids;
}

export async function measureQueues(target: BenchTarget, settings: QueueSettings): Promise<QueueFigures> {
  const api = (path: string, init?: RequestInit) => callApi(`${target.apiUrl}${path}`, target.adminKey, init);
  const agent = async (name: string): Promise<{ id: string; template: string }> => {
    const { id } = await api('/v1/agents', { method: 'POST', body: JSON.stringify({ name, model: BENCH_MODEL, concurrency: 'enqueue' }) });
    const ran = await api(`/v1/agents/${id}/run`, { method: 'POST', body: JSON.stringify({ input: 'Hello.' }) });
    if (ran.status !== 'completed') throw new Error(`a queues bench run ended ${ran.status}: ${JSON.stringify(ran.error)}`);
    return { id, template: ran.id };
  };
  const [short, long] = [await agent('short queue'), await agent('long queue')];
  const db = createDb(target.databaseUrl, { max: 2, log: createLogger('warn') });
  const seeded: string[] = [];
  try {
    const shortQueue = await copies(db, short.template, settings.shortQueue, 'queued');
    const longQueue = await copies(db, long.template, settings.longQueue, 'queued');
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO threads (id, project_id) SELECT t.id, r.project_id FROM runs r, unnest($2::text[]) AS t(id) WHERE r.id = $1 RETURNING id`,
      [short.template, [newId('thread'), newId('thread')]],
    );
    const [shortThread, longThread] = rows.map((row) => row.id) as [string, string];
    const onThread = async (thread: string, ended: number) => {
      seeded.push(...(await copies(db, short.template, ended, 'completed', thread)));
      return (await copies(db, short.template, 1, 'queued', thread))[0]!;
    };
    const [shortThreadRun, longThreadRun] = [
      await onThread(shortThread, settings.shortQueue),
      await onThread(longThread, settings.longThreadRuns),
    ];
    seeded.push(...shortQueue, ...longQueue, shortThreadRun, longThreadRun);
    await db.query('ANALYZE runs');
    const record = async (id: string): Promise<RunRecord> => (await runById(db, id))!;
    const [lastShort, lastLong] = [await record(shortQueue.at(-1)!), await record(longQueue.at(-1)!)];
    const [threadShort, threadLong] = [await record(shortThreadRun), await record(longThreadRun)];
    return {
      admission: await inTurns(
        settings,
        () => admissionOf(db, lastShort, 'enqueue'),
        () => admissionOf(db, lastLong, 'enqueue'),
      ),
      wake: await inTurns(
        settings,
        () => nextQueuedRun(db, short.id),
        () => nextQueuedRun(db, long.id),
      ),
      threadAdmission: await inTurns(
        settings,
        () => admissionOf(db, threadShort, 'allow'),
        () => admissionOf(db, threadLong, 'allow'),
      ),
      threadWake: await inTurns(
        settings,
        () => nextRunOnThread(db, shortThread),
        () => nextRunOnThread(db, longThread),
      ),
    };
  } finally {
    await db
      .query(`UPDATE runs SET status = 'cancelled', completed_at = now() WHERE id = ANY($1) AND status = 'queued'`, [seeded])
      .finally(() => db.end());
  }
}
