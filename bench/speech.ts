/**
 * Offline speech-to-text speed: a ~30 s espeak-ng clip (WAV) transcribed by a warm sidecar (model loaded,
 * one file already transcribed), `samples` times one after another.
 *   real-time factor  processing seconds ÷ audio seconds (median of the samples): 0.1 means an hour of audio
 *                     takes six minutes. Below 1 is faster than real time.
 *   CPU factor        the sidecar's CPU seconds ÷ audio seconds: what the work costs whatever else the
 *                     machine was doing (the wall-clock factor moves with other load, this much less).
 *   load             the seconds from starting the sidecar to its model being ready.
 * `node dist/bench/speech.js` runs it alone (after `npm run build`).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Transcriber } from '../workflows/extraction/engines/speech/transcriber.js';
import { spokenWav, wavDurationMs } from '../test/support/audio-fixtures.js';
import { cpuMs } from './proc.js';

// About 30 seconds at espeak-ng's default 175 words a minute.
const PASSAGE = [
  'The quarterly report from Acme Corporation was approved in Berlin on Monday.',
  'Revenue grew by twelve percent, driven by strong demand for the new storage products in Europe and Asia.',
  'The board asked the finance team to prepare a detailed forecast for the next two quarters,',
  'including the cost of opening a second office in Madrid and hiring forty engineers.',
  'Shipping delays in the spring reduced margins, but the company expects them to recover by the end of the year.',
  'The next meeting will take place in Paris on the fourteenth of October, where the final budget will be signed.',
].join(' ');

export interface SpeechSettings {
  samples: number;
  /** CPU threads for the model; default every core. */
  threads?: number;
}

export interface SpeechFigures {
  audioSeconds: number;
  loadSeconds: number;
  /** Wall-clock seconds of each sample. */
  processingSeconds: number[];
  realTimeFactor: number;
  cpuFactor: number;
  words: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function measureSpeech(settings: SpeechSettings): Promise<SpeechFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'agentplane-bench-speech-'));
  const transcriber = new Transcriber(settings.threads === undefined ? {} : { threads: settings.threads });
  try {
    const wav = await spokenWav(dir, 'passage.wav', PASSAGE);
    const audioSeconds = wavDurationMs(await readFile(wav)) / 1000;

    const loadStarted = performance.now();
    await transcriber.start();
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    const warmup = await transcriber.transcribe(wav);

    const processingSeconds: number[] = [];
    const cpuBefore = cpuMs(transcriber.pid!);
    for (let i = 0; i < settings.samples; i++) {
      const started = performance.now();
      await transcriber.transcribe(wav);
      processingSeconds.push((performance.now() - started) / 1000);
    }
    const cpuSeconds = (cpuMs(transcriber.pid!) - cpuBefore) / 1000 / settings.samples;
    return {
      audioSeconds,
      loadSeconds,
      processingSeconds,
      realTimeFactor: median(processingSeconds) / audioSeconds,
      cpuFactor: cpuSeconds / audioSeconds,
      words: warmup.segments.reduce((count, segment) => count + segment.words.length, 0),
    };
  } finally {
    await transcriber.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const figures = await measureSpeech({ samples: 5 });
  const fixed = (value: number) => value.toFixed(3);
  console.log(
    `speech  ${fixed(figures.audioSeconds)} s of audio, ${figures.words} words; model load ${fixed(figures.loadSeconds)} s; ` +
      `processing ${figures.processingSeconds.map(fixed).join(', ')} s; real-time factor ${fixed(figures.realTimeFactor)}, CPU factor ${fixed(figures.cpuFactor)}`,
  );
}
