/**
 * The upload benchmark: one multipart body carrying a WAV file of exactly the size limit, generated
 * as it is sent (a header, then one shared block of zeros over and over), timed to the end of the
 * response while the receiving process's memory is watched.
 */
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { watchRss } from './proc.js';
import { wavHeader } from '../test/support/fixtures.js';

export const UPLOAD_BYTES = 104_857_600;
const MB = 1024 * 1024;
const ZEROS = Buffer.alloc(256 * 1024);
const BOUNDARY = 'agentplane-bench-boundary';
const IDLE_TIMEOUT_MS = 60_000;

export interface UploadBody {
  headers: Record<string, string>;
  chunks(): AsyncGenerator<Buffer>;
}

/** `purpose=context` and a WAV `file` part of `fileBytes` bytes, as multipart/form-data. */
export function wavUpload(fileBytes: number): UploadBody {
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\ncontext\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="bench.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  return {
    headers: {
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      'content-length': String(head.length + fileBytes + tail.length),
    },
    async *chunks() {
      yield head;
      yield wavHeader(fileBytes - 44);
      for (let left = fileBytes - 44; left > 0; left -= ZEROS.length) yield left >= ZEROS.length ? ZEROS : ZEROS.subarray(0, left);
      yield tail;
    },
  };
}

export interface PostResponse {
  status: number;
  text: string;
}

/** POSTs the body and resolves with the whole response. */
export function post(url: string, body: UploadBody, headers: Record<string, string> = {}): Promise<PostResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { ...body.headers, ...headers }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(IDLE_TIMEOUT_MS, () => req.destroy(new Error(`no progress for ${IDLE_TIMEOUT_MS / 1000} s`)));
    pipeline(Readable.from(body.chunks(), { objectMode: false }), req).catch(reject);
  });
}

export interface UploadFigures {
  seconds: number;
  mbPerSecond: number;
  rssBeforeMb: number;
  rssPeakMb: number;
  rssGrowthMb: number;
}

/** Uploads UPLOAD_BYTES to `url` (served by process `pid`); `check` rejects a wrong answer. */
export async function measureUpload(
  url: string,
  pid: number,
  headers: Record<string, string>,
  check: (response: PostResponse) => void,
): Promise<UploadFigures> {
  const rss = watchRss(pid);
  const started = process.hrtime.bigint();
  const response = await post(url, wavUpload(UPLOAD_BYTES), headers).catch((err: Error) => {
    rss.stop();
    throw err;
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const memory = rss.stop();
  check(response);
  return {
    seconds,
    mbPerSecond: UPLOAD_BYTES / MB / seconds,
    rssBeforeMb: memory.beforeMb,
    rssPeakMb: memory.peakMb,
    rssGrowthMb: memory.growthMb,
  };
}
