/**
 * The threads benchmark. A run on a thread of 1,000 messages against a run with no history, one after another in
 * turns, in the same stack (the difference is what the thread costs the platform: reading the window, building the
 * call, and sending the longer conversation to a model that answers at once); and `GET /v1/threads?q=` over
 * 100,000 messages in 1,000 threads; and a run's read of its thread's history, as much as a window of
 * `HISTORY_WINDOW_TOKENS` holds, on a thread of `longestThreadMessages` against the thread of 1,000, in turns: what
 * a run costs the database every project shares must not grow with how long a tenant has let its thread grow. The
 * same for a run's memories of its subject: one that holds `mostMemories` against one that holds 1,000.
 */
import { newId } from '../records/ids.js';
import { createDb } from '../records/db.js';
import { historyWithin, messageTokens } from '../records/threads.js';
import { currentMemories } from '../records/memories.js';
import { createLogger } from '../cli/runtime.js';
import { callApi, type BenchTarget } from './stack.js';
import { latencyOf, samplesInTurns, timed, type LatencyFigures } from './runs.js';

export interface ThreadSettings {
  warmups: number;
  /** Runs of each kind measured. */
  samples: number;
  /** The long thread's messages. */
  historyMessages: number;
  /** Messages searched, in threads of `messagesPerThread`. */
  searchMessages: number;
  messagesPerThread: number;
  searches: number;
  /** The longest thread whose history is read against the thread of `historyMessages`. */
  longestThreadMessages: number;
  /** The current memories of the subject whose memories are read against one of 1,000. */
  mostMemories: number;
}

export interface ThreadFigures {
  noHistory: LatencyFigures;
  longThread: LatencyFigures & { messages: number };
  /** longThread p50 − noHistory p50. */
  overheadP50Ms: number;
  search: LatencyFigures & { messages: number; seedSeconds: number };
  /** A run's read of its history (a window's worth, the same on both), on the thread of `historyMessages` and on the longest. */
  historyRead: { window: number; short: LatencyFigures & { messages: number }; longest: LatencyFigures & { messages: number } };
  /** historyRead.longest p50 ÷ historyRead.short p50. */
  historyReadRatio: number;
  /** A run's read of its subject's memories (the newest shown), for a subject of 1,000 and one of `mostMemories`. */
  memoryRead: { few: LatencyFigures & { memories: number }; most: LatencyFigures & { memories: number } };
  /** memoryRead.most p50 ÷ memoryRead.few p50. */
  memoryReadRatio: number;
}

const FEW_MEMORIES = 1_000;

// A window that the shorter thread more than fills (its messages are about 70 tokens each), so both reads keep as much.
const HISTORY_WINDOW_TOKENS = 10_000;

// A model with a window that holds the whole thread: the built-in catalogue's, answered by the bench's model server.
const LONG_WINDOW_MODEL = 'gpt-4.1-mini';

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'do', 'fe', 'gu', 'hi', 'ja', 'be'];

/** A word of the seeded vocabulary: two or three syllables, 4,096 + 65,536 of them. */
function word(n: number): string {
  const parts = [SYLLABLES[n % 16]!, SYLLABLES[(n >> 4) % 16]!, SYLLABLES[(n >> 8) % 16]!];
  if (n >= 4096) parts.push(SYLLABLES[(n >> 12) % 16]!);
  return parts.join('');
}

/** A message of `words` words drawn from the vocabulary, as a support conversation's turn is long. */
function sentence(random: () => number, words: number): string {
  return Array.from({ length: words }, () => word(Math.floor(random() * 20_000))).join(' ') + '.';
}

function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 4_294_967_296;
  };
}

/** Two ways of doing one thing, timed in turns (ms each), the warm-ups left out of the figures. */
async function inTurns(
  settings: Pick<ThreadSettings, 'warmups' | 'samples'>,
  first: () => Promise<number>,
  second: () => Promise<number>,
): Promise<[LatencyFigures, LatencyFigures]> {
  const [firsts, seconds] = await samplesInTurns(settings, first, second);
  return [latencyOf(firsts), latencyOf(seconds)];
}

/** Threads of messages written straight to the database, `messagesPerThread` each, in batches. */
async function seedThreads(
  databaseUrl: string,
  projectId: string,
  threads: number,
  messagesPerThread: number,
  random: () => number,
): Promise<string[]> {
  const db = createDb(databaseUrl, { max: 2, log: createLogger('warn') });
  try {
    const ids = Array.from({ length: threads }, () => newId('thread'));
    await db.query(`INSERT INTO threads (id, project_id, message_count) SELECT id, $2, $3 FROM unnest($1::text[]) AS t(id)`, [
      ids,
      projectId,
      messagesPerThread,
    ]);
    const BATCH = 5_000;
    const rows: { id: string; thread: string; seq: number; role: string; content: string }[] = [];
    const flush = async () => {
      await db.query(
        `INSERT INTO thread_messages (id, thread_id, project_id, seq, role, content, tokens)
         SELECT id, thread, $1, seq, role, content, tokens FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::int[])
           AS m(id, thread, seq, role, content, tokens)`,
        [
          projectId,
          rows.map((r) => r.id),
          rows.map((r) => r.thread),
          rows.map((r) => r.seq),
          rows.map((r) => r.role),
          rows.map((r) => r.content),
          rows.map((r) => messageTokens(r.content)),
        ],
      );
      rows.length = 0;
    };
    for (const thread of ids)
      for (let seq = 1; seq <= messagesPerThread; seq++) {
        rows.push({ id: newId('msg'), thread, seq, role: seq % 2 ? 'user' : 'assistant', content: sentence(random, 25) });
        if (rows.length === BATCH) await flush();
      }
    if (rows.length > 0) await flush();
    await db.query('ANALYZE thread_messages');
    return ids;
  } finally {
    await db.end();
  }
}

export async function measureThreads(target: BenchTarget, settings: ThreadSettings): Promise<ThreadFigures> {
  const api = (path: string, init?: RequestInit) => callApi(`${target.apiUrl}${path}`, target.adminKey, init);
  const random = seeded(7);
  const { id: agentId } = await api('/v1/agents', {
    method: 'POST',
    body: JSON.stringify({ name: 'threads bench', model: LONG_WINDOW_MODEL }),
  });
  const project = await projectOf(target, agentId);
  const [longThread] = await seedThreads(target.databaseUrl, project, 1, settings.historyMessages, random);

  const run = (body: Record<string, unknown>) =>
    timed(async () => {
      const ended = await api(`/v1/agents/${agentId}/run`, {
        method: 'POST',
        body: JSON.stringify({ input: 'And what about my order?', ...body }),
      });
      if (ended.status !== 'completed') throw new Error(`a threads bench run ended ${ended.status}: ${JSON.stringify(ended.error)}`);
    });
  const [noHistory, longFigures] = await inTurns(
    settings,
    () => run({}),
    () => run({ thread_id: longThread }),
  );

  const seedStarted = performance.now();
  await seedThreads(target.databaseUrl, project, settings.searchMessages / settings.messagesPerThread, settings.messagesPerThread, random);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const searches: number[] = [];
  for (let i = 0; i < settings.warmups + settings.searches; i++) {
    // One word, then two: a word is in about 125 messages; two together, in few or none.
    const words = Array.from({ length: 1 + (i % 2) }, () => word(Math.floor(random() * 20_000)));
    const q = words.join(' ');
    const took = await timed(async () => void (await api(`/v1/threads?q=${encodeURIComponent(q)}&limit=20`)));
    if (i >= settings.warmups) searches.push(took);
  }

  const historyRead = await measureHistoryRead(target, project, longThread!, settings, random);
  const memoryRead = await measureMemoryRead(target, project, settings);
  return {
    noHistory,
    longThread: { ...longFigures, messages: settings.historyMessages },
    overheadP50Ms: longFigures.p50Ms - noHistory.p50Ms,
    search: { ...latencyOf(searches), messages: settings.searchMessages, seedSeconds },
    historyRead,
    historyReadRatio: historyRead.longest.p50Ms / historyRead.short.p50Ms,
    memoryRead,
    memoryReadRatio: memoryRead.most.p50Ms / memoryRead.few.p50Ms,
  };
}

/** A run's read of its subject's memories, as the run makes it, for a subject of 1,000 and one of `mostMemories`, in turns. */
async function measureMemoryRead(target: BenchTarget, project: string, settings: ThreadSettings): Promise<ThreadFigures['memoryRead']> {
  const db = createDb(target.databaseUrl, { max: 1, log: createLogger('warn') });
  try {
    const subjects = { few: newId('subject'), most: newId('subject') };
    for (const [subject, count] of [
      [subjects.few, FEW_MEMORIES],
      [subjects.most, settings.mostMemories],
    ] as const)
      await db.query(
        `INSERT INTO memories (id, project_id, subject_id, attribute, value, value_key, statement, confidence, extractor, learned_at)
         SELECT $3 || '_' || g, $1, $2, 'fact ' || g, 'value ' || g, 'value ' || g, 'My fact ' || g || ' is value ' || g, 0.9, 'rules',
                now() - make_interval(secs => g)
         FROM generate_series(1, $4::int) g`,
        [project, subject, newId('mem'), count],
      );
    await db.query('ANALYZE memories');
    const [few, most] = await inTurns(
      settings,
      () => timed(async () => void (await currentMemories(db, project, subjects.few))),
      () => timed(async () => void (await currentMemories(db, project, subjects.most))),
    );
    return { few: { ...few, memories: FEW_MEMORIES }, most: { ...most, memories: settings.mostMemories } };
  } finally {
    await db.end();
  }
}

/** A run's read of its thread's history, as the run makes it, on the thread of `historyMessages` and on the longest, in turns. */
async function measureHistoryRead(
  target: BenchTarget,
  project: string,
  shortThread: string,
  settings: ThreadSettings,
  random: () => number,
): Promise<ThreadFigures['historyRead']> {
  const [longest] = await seedThreads(target.databaseUrl, project, 1, settings.longestThreadMessages, random);
  const db = createDb(target.databaseUrl, { max: 1, log: createLogger('warn') });
  try {
    const [short, long] = await inTurns(
      settings,
      () => timed(async () => void (await historyWithin(db, shortThread, HISTORY_WINDOW_TOKENS))),
      () => timed(async () => void (await historyWithin(db, longest!, HISTORY_WINDOW_TOKENS))),
    );
    return {
      window: HISTORY_WINDOW_TOKENS,
      short: { ...short, messages: settings.historyMessages },
      longest: { ...long, messages: settings.longestThreadMessages },
    };
  } finally {
    await db.end();
  }
}

/** The project the bench's agent was made in. */
async function projectOf(target: BenchTarget, agentId: string): Promise<string> {
  const db = createDb(target.databaseUrl, { max: 1, log: createLogger('warn') });
  try {
    const { rows } = await db.query<{ project_id: string }>('SELECT project_id FROM agents WHERE id = $1', [agentId]);
    return rows[0]!.project_id;
  } finally {
    await db.end();
  }
}
