/**
 * Speech to text for audio files (WAV, M4A): offline, through a long-lived Python sidecar running
 * faster-whisper with the Whisper model scripts/deps installs; or, with AGENTPLANE_TRANSCRIPTION_MODEL and
 * OPENAI_BASE_URL set, through that OpenAI-compatible server's `/audio/transcriptions`.
 * Failures a retry cannot fix are ExtractionErrors (`invalid_file`, `transcription_failed`); others are retryable.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { transcribeWithServer } from './openai-transcription.js';
import { Sidecar, SidecarExited, type AudioWindow, type Transcript } from './sidecar.js';

export type { AudioWindow, Transcript } from './sidecar.js';

const sidecarScript = fileURLToPath(new URL('./transcriber.py', import.meta.url));

export interface TranscriberOptions {
  /** The Python that runs the sidecar; default AGENTPLANE_SPEECH_PYTHON, else the virtualenv scripts/deps made. */
  python?: string;
  /** CPU threads for the model; default AGENTPLANE_SPEECH_THREADS, else every core. */
  threads?: number;
  /** How long the sidecar may take to load the model. */
  startTimeoutMs?: number;
  /** How long one file may take; the sidecar is killed (and started again for the next file) past it. */
  requestTimeoutMs?: number;
  /** The longest audio transcribed; a longer file fails `invalid_file` as its decoding passes it. */
  maxAudioSeconds?: number;
}

const DEFAULT_START_TIMEOUT_MS = 120_000;
// About an hour of audio on two cores, with room to spare.
const DEFAULT_REQUEST_TIMEOUT_MS = 30 * 60_000;
/**
 * Two hours: 460 MB decoded, and longer than the timeout lets two cores transcribe. A longer file held the one
 * sidecar every project's audio waits for until the timeout, at each attempt, and a day of audio ran the worker
 * out of memory.
 */
export const MAX_AUDIO_SECONDS = 2 * 3600;
const STOP_GRACE_MS = 5_000;

/**
 * Transcribes files one at a time on one sidecar, started on the first request. A sidecar that dies is
 * started again; the request it was working on is tried once more on the new one.
 */
/** The virtualenv's Python that the process found at start (the worker names it); AGENTPLANE_SPEECH_PYTHON wins. */
let speechPython: string | undefined;

export function useSpeechPython(path: string): void {
  speechPython = path;
}

export class Transcriber {
  readonly #python: string | undefined;
  readonly #threads: number;
  readonly #startTimeoutMs: number;
  readonly #requestTimeoutMs: number;
  readonly #maxAudioSeconds: number;
  #sidecar: Sidecar | null = null;
  #tail: Promise<unknown> = Promise.resolve();
  #nextId = 1;

  constructor(options: TranscriberOptions = {}) {
    this.#python = options.python;
    this.#threads = options.threads ?? (Number(process.env.AGENTPLANE_SPEECH_THREADS) || availableParallelism());
    this.#startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#maxAudioSeconds = options.maxAudioSeconds ?? MAX_AUDIO_SECONDS;
  }

  /** The running sidecar's process id; undefined before the first request and after close(). */
  get pid(): number | undefined {
    return this.#sidecar && !this.#sidecar.exited ? this.#sidecar.pid : undefined;
  }

  /** Starts the sidecar and waits until its model is loaded (the first transcription does this itself). */
  async start(): Promise<void> {
    await this.#running();
  }

  /** The file's transcript, or the window's: its segments, and where the next window starts. */
  transcribe(path: string, window?: AudioWindow): Promise<Transcript> {
    // One file at a time: the sidecar works on one anyway, and a timeout then measures only that file.
    const result = this.#tail.then(() => this.#attempt(path, 1, window));
    this.#tail = result.catch(() => undefined);
    return result;
  }

  async close(): Promise<void> {
    const sidecar = this.#sidecar;
    this.#sidecar = null;
    await sidecar?.stop(STOP_GRACE_MS);
  }

  async #attempt(path: string, attempt: number, window: AudioWindow | undefined): Promise<Transcript> {
    const sidecar = await this.#running();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        sidecar.kill();
        reject(new Error(`The transcription of ${path} took longer than ${this.#requestTimeoutMs} ms; the speech sidecar was stopped`));
      }, this.#requestTimeoutMs);
    });
    try {
      return await Promise.race([sidecar.request(this.#nextId++, path, this.#maxAudioSeconds, window), timedOut]);
    } catch (err) {
      if (err instanceof SidecarExited && attempt === 1) return this.#attempt(path, attempt + 1, window);
      if (err instanceof SidecarExited) throw new Error(`${err.message} (twice, while transcribing ${path})`, { cause: err });
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  async #running(): Promise<Sidecar> {
    if (this.#sidecar && !this.#sidecar.exited) {
      await this.#sidecar.ready;
      return this.#sidecar;
    }
    const python = this.#python ?? process.env.AGENTPLANE_SPEECH_PYTHON ?? speechPython;
    if (!python) throw new Error('No Python with faster-whisper is configured: run `npm run deps` (or set AGENTPLANE_SPEECH_PYTHON).');
    const sidecar = new Sidecar(python, sidecarScript, this.#threads);
    this.#sidecar = sidecar;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        sidecar.kill();
        reject(new Error(`The speech sidecar did not load its model within ${this.#startTimeoutMs} ms`));
      }, this.#startTimeoutMs);
    });
    try {
      await Promise.race([sidecar.ready, timedOut]);
    } catch (err) {
      // A sidecar that cannot start is not retried here: the same cause would stop the next one.
      throw err instanceof SidecarExited ? new Error(err.message) : err;
    } finally {
      clearTimeout(timer);
    }
    return sidecar;
  }
}

let shared: Transcriber | null = null;

/**
 * The transcript of the audio file at `path` (whose extension names its format: `.wav`, `.m4a`), through
 * the configured OpenAI-compatible server (the whole file, whatever the window) or else the process's one
 * shared sidecar (the window's, when one is given).
 */
export async function transcribeAudio(path: string, window?: AudioWindow): Promise<Transcript> {
  const model = process.env.AGENTPLANE_TRANSCRIPTION_MODEL;
  if (model && process.env.OPENAI_BASE_URL) return transcribeWithServer(path, model, process.env);
  shared ??= new Transcriber();
  return shared.transcribe(path, window);
}

/** Stops the shared sidecar, if one was started (a later transcribeAudio starts another). */
export async function closeSharedTranscriber(): Promise<void> {
  await shared?.close();
}
