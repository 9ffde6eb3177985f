/**
 * One running speech sidecar (transcriber.py): a Python process that has loaded the model, spoken to in JSON
 * lines. Transcriber decides when to start one, what to retry and when to give up on it.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import type { TranscriptSegment } from '../content.js';
import { ExtractionError } from '../errors.js';

export interface Transcript {
  segments: TranscriptSegment[];
  duration_ms: number;
  /** Of a window: where the next window starts (milliseconds into the file), or null when the audio has ended. */
  next_ms?: number | null;
}

/** A part of a file to transcribe: the segments that start within `seconds` of `fromMs`. */
export interface AudioWindow {
  fromMs: number;
  seconds: number;
}

/** The sidecar went away while a request was in flight: the request may succeed on a new one. */
export class SidecarExited extends Error {}

interface Waiting {
  resolve: (transcript: Transcript) => void;
  reject: (err: Error) => void;
}

// What the sidecar last wrote to stderr, for the message when it fails to start or dies.
const STDERR_TAIL_CHARS = 2_000;

export class Sidecar {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #waiting = new Map<number, Waiting>();
  readonly ready: Promise<void>;
  #stderr = '';
  #exit: Error | null = null;

  constructor(python: string, script: string, threads: number) {
    this.#child = spawn(python, [script, '--threads', String(threads)], {
      env: { ...process.env, HF_HUB_OFFLINE: '1', PYTHONUNBUFFERED: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.#child.stderr.setEncoding('utf8').on('data', (text: string) => {
      this.#stderr = (this.#stderr + text).slice(-STDERR_TAIL_CHARS);
    });
    // A write to a sidecar that has just died fails with EPIPE; its exit is what the caller hears about.
    this.#child.stdin.on('error', () => undefined);

    let onReady: () => void = () => undefined;
    let onNotReady: (err: Error) => void = () => undefined;
    this.ready = new Promise<void>((resolve, reject) => {
      onReady = resolve;
      onNotReady = reject;
    });
    this.ready.catch(() => undefined);

    createInterface({ input: this.#child.stdout }).on('line', (line) => {
      const message = parse(line);
      if (message === 'ready') {
        this.#holdProcessOpen(false);
        return onReady();
      }
      if (!message) return;
      const waiting = this.#waiting.get(message.id);
      if (!waiting) return;
      this.#waiting.delete(message.id);
      if (this.#waiting.size === 0) this.#holdProcessOpen(false);
      if ('error' in message) waiting.reject(message.error);
      else waiting.resolve(message.transcript);
    });

    const ended = (reason: string) => {
      if (this.#exit) return;
      const detail = this.#stderr.trim() ? `: ${this.#stderr.trim()}` : '';
      this.#exit = new SidecarExited(`The speech sidecar ${reason}${detail}`);
      onNotReady(this.#exit);
      for (const { reject } of this.#waiting.values()) reject(this.#exit);
      this.#waiting.clear();
    };
    this.#child.on('error', (err) => ended(`could not be started (${err.message}); run \`npm run deps\``));
    this.#child.on('exit', (code, signal) => ended(signal ? `was killed by ${signal}` : `exited with status ${code}`));
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get exited(): boolean {
    return this.#exit !== null;
  }

  /**
   * The transcript of the file at `path`, or of a window of it, refused (`invalid_file`) once its audio goes past
   * `maxSeconds`.
   */
  request(id: number, path: string, maxSeconds: number, window?: AudioWindow): Promise<Transcript> {
    if (this.#exit) return Promise.reject(this.#exit);
    const part = window ? { from_ms: Math.round(window.fromMs), window_seconds: window.seconds } : {};
    return new Promise<Transcript>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#holdProcessOpen(true);
      this.#child.stdin.write(`${JSON.stringify({ id, path, max_seconds: maxSeconds, ...part })}\n`);
    });
  }

  /** Asks the sidecar to finish (end of input), and kills it if it has not within `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    if (this.#exit) return;
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    this.#child.stdin.end();
    const timer = setTimeout(() => this.kill(), graceMs);
    await exited;
    clearTimeout(timer);
  }

  kill(): void {
    if (!this.#exit) this.#child.kill('SIGKILL');
  }

  // An idle sidecar does not keep Node running (a command that transcribed one file ends when it is done);
  // one loading its model or working on a file does, since someone awaits it.
  #holdProcessOpen(hold: boolean): void {
    for (const handle of [
      this.#child,
      this.#child.stdin as unknown as Socket,
      this.#child.stdout as unknown as Socket,
      this.#child.stderr as unknown as Socket,
    ]) {
      if (hold) handle.ref();
      else handle.unref();
    }
  }
}

type Message = { id: number; transcript: Transcript } | { id: number; error: Error };

/** One line of the sidecar's output; null for a line that is not a response (nothing else should be there). */
function parse(line: string): Message | 'ready' | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!isObject(value)) return null;
  if (value.ready === true) return 'ready';
  if (typeof value.id !== 'number') return null;
  if (isObject(value.error)) {
    const code = value.error.code === 'invalid_file' ? 'invalid_file' : 'transcription_failed';
    return { id: value.id, error: new ExtractionError(code, String(value.error.message ?? 'the transcription failed')) };
  }
  if (!Array.isArray(value.segments) || typeof value.duration_ms !== 'number') {
    return { id: value.id, error: new Error(`The speech sidecar answered with an unexpected body: ${line.slice(0, 200)}`) };
  }
  // The sidecar is ours and writes exactly this shape (transcriber.py).
  const next = typeof value.next_ms === 'number' ? value.next_ms : null;
  return { id: value.id, transcript: { segments: value.segments as TranscriptSegment[], duration_ms: value.duration_ms, next_ms: next } };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
