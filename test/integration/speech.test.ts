import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TranscriptSegment } from '../../workflows/extraction/engines/content.js';
import { ExtractionError } from '../../workflows/extraction/engines/errors.js';
import {
  closeSharedTranscriber,
  transcribeAudio,
  Transcriber,
  useSpeechPython,
  type Transcript,
} from '../../workflows/extraction/engines/speech/transcriber.js';
import { findTool } from '../../cli/tools.js';
import { m4aOf, spokenWav, TALK, wavDurationMs } from '../support/audio-fixtures.js';
import { wav as silentWav } from '../support/fixtures.js';
import { startTranscriptionServer, type TranscriptionServer } from '../support/model-servers/transcription.js';

const SENTENCE =
  'The quarterly report from Acme Corporation was approved in Berlin on Monday. The finance team will meet again in Paris next week.';
const KEY_WORDS = [
  'quarterly',
  'report',
  'acme',
  'corporation',
  'approved',
  'berlin',
  'monday',
  'finance',
  'team',
  'meet',
  'paris',
  'week',
];
// Whisper tiny.en hears espeak-ng's "Acme Corporation" as "a declaration": allow a few misses, not many.
const KEY_WORD_SHARE = 0.8;

function keyWordShare(transcript: Transcript): number {
  const heard = new Set(transcript.segments.flatMap((segment) => segment.text.toLowerCase().match(/[a-z]+/g) ?? []));
  return KEY_WORDS.filter((word) => heard.has(word)).length / KEY_WORDS.length;
}

/** Segments and words in time order, each within its segment, and all within the clip. */
function assertPlausibleTimes(segments: TranscriptSegment[], durationMs: number): void {
  let segmentStart = 0;
  let wordStart = 0;
  for (const segment of segments) {
    assert.ok(segment.start_ms >= segmentStart, `segment "${segment.text}" starts before the one before it`);
    assert.ok(segment.end_ms > segment.start_ms, `segment "${segment.text}" ends before it starts`);
    assert.ok(
      segment.end_ms <= durationMs + 100,
      `segment "${segment.text}" ends at ${segment.end_ms} ms, past the clip's ${durationMs} ms`,
    );
    assert.ok(segment.words.length > 0, `segment "${segment.text}" has no words`);
    for (const word of segment.words) {
      assert.ok(word.start_ms >= wordStart, `"${word.word}" starts before the word before it`);
      assert.ok(word.end_ms >= word.start_ms, `"${word.word}" ends before it starts`);
      assert.ok(word.start_ms >= segment.start_ms && word.end_ms <= segment.end_ms, `"${word.word}" lies outside its segment`);
      assert.ok(word.probability >= 0 && word.probability <= 1, `"${word.word}" has probability ${word.probability}`);
      assert.ok(word.word.trim() !== '', 'a word is empty');
      wordStart = word.start_ms;
    }
    segmentStart = segment.start_ms;
  }
  const last = segments.at(-1)!;
  // The speech fills the clip: it is espeak-ng's, with no long silence at either end.
  assert.ok(
    last.end_ms - segments[0]!.start_ms >= durationMs * 0.7,
    `the words span ${segments[0]!.start_ms}–${last.end_ms} ms of ${durationMs} ms`,
  );
}

/** A stand-in for the sidecar's Python that runs `body` (sh) instead, counting its starts in `dir/starts`. */
async function fakeSidecar(dir: string, name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `#!/bin/sh\necho started >> "${dir}/${name}.starts"\necho '{"ready": true}'\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

const startsOf = async (dir: string, name: string) => (await readFile(join(dir, `${name}.starts`), 'utf8')).trim().split('\n').length;

describe('speech to text: the faster-whisper sidecar (Whisper tiny.en, offline)', function () {
  this.timeout(120_000);
  let dir: string;
  let wav: string;
  let m4a: string;
  let durationMs: number;
  const transcriber = new Transcriber({ python: findTool('speech-python') });

  before(async () => {
    // As the worker does at start.
    useSpeechPython(findTool('speech-python'));
    dir = await mkdtemp(join(tmpdir(), 'agentplane-speech-'));
    wav = await spokenWav(dir, 'report.wav', SENTENCE);
    m4a = await m4aOf(wav);
    durationMs = wavDurationMs(await readFile(wav));
  });
  after(async () => {
    await transcriber.close();
    await closeSharedTranscriber();
    await rm(dir, { recursive: true, force: true });
  });

  it('transcribes a spoken WAV: most key words heard, segments and words in time order within the clip', async () => {
    const transcript = await transcribeAudio(wav);
    assert.ok(
      keyWordShare(transcript) >= KEY_WORD_SHARE,
      `heard ${keyWordShare(transcript)} of the key words in: ${transcript.segments.map((s) => s.text).join(' ')}`,
    );
    assert.ok(Math.abs(transcript.duration_ms - durationMs) <= 50, `duration ${transcript.duration_ms} ms, the WAV's is ${durationMs} ms`);
    assertPlausibleTimes(transcript.segments, transcript.duration_ms);
  });

  it('hears nothing in a minute of silence (Whisper alone would invent words there)', async () => {
    const silence = join(dir, 'silence.wav');
    await writeFile(silence, silentWav(60));
    assert.deepEqual((await transcriber.transcribe(silence)).segments, []);
  });

  it('transcribes the same speech from an M4A (AAC), with the same plausibility', async () => {
    const transcript = await transcriber.transcribe(m4a);
    assert.ok(
      keyWordShare(transcript) >= KEY_WORD_SHARE,
      `heard ${keyWordShare(transcript)} of the key words in: ${transcript.segments.map((s) => s.text).join(' ')}`,
    );
    assert.ok(Math.abs(transcript.duration_ms - durationMs) <= 100, `duration ${transcript.duration_ms} ms, the WAV's is ${durationMs} ms`);
    assertPlausibleTimes(transcript.segments, transcript.duration_ms);
  });

  for (const format of ['wav', 'm4a'] as const) {
    it(`hears a long recording (${format}) a window at a time: each the segments that start in it, in order and once, until the audio ends`, async () => {
      // About 50 s: windows of 8 s, each heard with the 30 s after it, until less than that is left. A window after
      // the start is sought to.
      const longWav = await spokenWav(dir, 'long.wav', TALK.map((t) => t.sentence).join(' '));
      const longMs = wavDurationMs(await readFile(longWav));
      const long = format === 'wav' ? longWav : await m4aOf(longWav);
      const WINDOW_SECONDS = 8;
      const windows: Transcript[] = [];
      for (let fromMs: number | null = 0; fromMs !== null;) {
        assert.ok(windows.length < 10, 'the windows do not move on');
        const window = await transcriber.transcribe(long, { fromMs, seconds: WINDOW_SECONDS });
        windows.push(window);
        const next = window.next_ms ?? null;
        for (const segment of window.segments) {
          assert.ok(segment.start_ms >= fromMs, `"${segment.text}" starts at ${segment.start_ms} ms, before its window at ${fromMs} ms`);
          if (next !== null)
            assert.ok(
              segment.start_ms < fromMs + WINDOW_SECONDS * 1000,
              `"${segment.text}" starts at ${segment.start_ms} ms, after its window`,
            );
        }
        if (next !== null) assert.ok(next >= fromMs + WINDOW_SECONDS * 1000, `the next window starts at ${next} ms, inside this one`);
        fromMs = next;
      }
      assert.ok(windows.length >= 3, `${longMs} ms of audio in ${windows.length} windows of ${WINDOW_SECONDS} s`);
      const segments = windows.flatMap((w) => w.segments);
      for (const [i, segment] of segments.entries())
        if (i > 0) assert.ok(segment.start_ms >= segments[i - 1]!.end_ms, `"${segment.text}" overlaps the segment before it`);
      assertPlausibleTimes(segments, longMs);
      const heard = segments.flatMap((segment) => segment.text.toLowerCase().match(/[a-z]+/g) ?? []);
      const keys = TALK.map(({ key }) => heard.filter((word) => word === key).length);
      assert.ok(
        keys.filter((n) => n === 1).length >= 12 && keys.every((n) => n <= 1),
        `the sentences' keys are heard ${keys.join(', ')} times in: ${heard.join(' ')}`,
      );
    });
  }

  it('fails bytes that are not audio with invalid_file, and the same sidecar goes on to the next file', async () => {
    const garbage = join(dir, 'garbage.wav');
    await writeFile(garbage, Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251)));
    const pid = transcriber.pid;
    await assert.rejects(
      transcriber.transcribe(garbage),
      (err: unknown) => err instanceof ExtractionError && err.code === 'invalid_file' && /decoded/.test(err.message),
    );
    const transcript = await transcriber.transcribe(wav);
    assert.ok(keyWordShare(transcript) >= KEY_WORD_SHARE);
    assert.equal(transcriber.pid, pid, 'the sidecar was not restarted');
  });

  it('fails audio longer than the most it transcribes with invalid_file as its decoding passes it, and goes on to the next file', async () => {
    const capped = new Transcriber({ python: findTool('speech-python'), maxAudioSeconds: 30 });
    try {
      const silence = join(dir, 'long-silence.wav');
      await writeFile(silence, silentWav(60));
      await assert.rejects(capped.transcribe(silence), (err: unknown) => {
        assert.ok(err instanceof ExtractionError, String(err));
        assert.deepEqual([err.code, err.message], ['invalid_file', 'the audio is longer than 30 seconds, the most transcribed of a file']);
        return true;
      });
      const pid = capped.pid;
      assert.ok(keyWordShare(await capped.transcribe(wav)) >= KEY_WORD_SHARE);
      assert.equal(capped.pid, pid, 'the sidecar was not restarted');
    } finally {
      await capped.close();
    }
  });

  it('starts a new sidecar after the running one is killed (SIGKILL), and the next file is transcribed', async () => {
    await transcriber.start();
    const killed = transcriber.pid!;
    process.kill(killed, 'SIGKILL');
    const transcript = await transcriber.transcribe(wav);
    assert.ok(keyWordShare(transcript) >= KEY_WORD_SHARE);
    assert.ok(transcriber.pid !== undefined && transcriber.pid !== killed, 'a new sidecar answered');
  });

  it('transcribes a file again on a new sidecar when the sidecar is killed while working on it', async () => {
    await transcriber.start();
    const killed = transcriber.pid!;
    const transcript = transcriber.transcribe(m4a);
    process.kill(killed, 'SIGKILL');
    assert.ok(keyWordShare(await transcript) >= KEY_WORD_SHARE);
    assert.notEqual(transcriber.pid, killed);
  });

  it('gives up with a retryable error (not an ExtractionError) when the sidecar dies on the file twice, and starts afresh for the next', async () => {
    const python = await fakeSidecar(dir, 'dies', 'read request\nexit 3');
    const dying = new Transcriber({ python });
    try {
      await assert.rejects(
        dying.transcribe(wav),
        (err: unknown) => !(err instanceof ExtractionError) && err instanceof Error && /exited with status 3 \(twice/.test(err.message),
      );
      assert.equal(await startsOf(dir, 'dies'), 2, 'one retry, on a second sidecar');
      await assert.rejects(dying.transcribe(wav), /exited with status 3/);
      assert.equal(await startsOf(dir, 'dies'), 4);
    } finally {
      await dying.close();
    }
  });

  it('stops a sidecar that takes longer than the timeout, with a retryable error, and starts another for the next file', async () => {
    const python = await fakeSidecar(dir, 'hangs', 'read request\nexec cat > /dev/null');
    const hanging = new Transcriber({ python, requestTimeoutMs: 300 });
    try {
      await hanging.start();
      const stuck = hanging.pid;
      await assert.rejects(
        hanging.transcribe(wav),
        (err: unknown) => !(err instanceof ExtractionError) && /took longer than 300 ms/.test((err as Error).message),
      );
      await assert.rejects(hanging.transcribe(wav), /took longer than 300 ms/);
      assert.equal(await startsOf(dir, 'hangs'), 2);
      assert.notEqual(hanging.pid, stuck);
    } finally {
      await hanging.close();
    }
  });

  it('lets a Node process that transcribed a file end by itself, without close(): an idle sidecar holds nothing open', async () => {
    const module = new URL('../../workflows/extraction/engines/speech/transcriber.js', import.meta.url).href;
    const script = `const { transcribeAudio } = await import(${JSON.stringify(module)}); console.log((await transcribeAudio(process.argv[1])).segments.length)`;
    const env = { ...process.env, AGENTPLANE_SPEECH_PYTHON: findTool('speech-python') };
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, wav], { timeout: 60_000, env });
    assert.ok(Number(stdout) >= 1, `the script printed ${stdout}`);
  });

  it('reports a Python that cannot be started as a retryable error naming `npm run deps`', async () => {
    const missing = new Transcriber({ python: join(dir, 'no-such-python') });
    await assert.rejects(
      missing.transcribe(wav),
      (err: unknown) => !(err instanceof ExtractionError) && /could not be started.*npm run deps/.test((err as Error).message),
    );
    await missing.close();
  });
});

describe('speech to text: an OpenAI-compatible server (AGENTPLANE_TRANSCRIPTION_MODEL with OPENAI_BASE_URL)', () => {
  let dir: string;
  let wav: string;
  let server: TranscriptionServer;
  const saved = { model: process.env.AGENTPLANE_TRANSCRIPTION_MODEL, url: process.env.OPENAI_BASE_URL };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentplane-speech-'));
    wav = await spokenWav(dir, 'short.wav', 'The report was approved on Monday.');
    server = await startTranscriptionServer();
    process.env.AGENTPLANE_TRANSCRIPTION_MODEL = 'whisper-1';
    process.env.OPENAI_BASE_URL = server.url;
  });
  after(async () => {
    for (const [name, value] of [
      ['AGENTPLANE_TRANSCRIPTION_MODEL', saved.model],
      ['OPENAI_BASE_URL', saved.url],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('sends the file for verbose JSON with word and segment timestamps, and gives each segment the words that start in it', async () => {
    server.answer({
      body: {
        task: 'transcribe',
        language: 'english',
        duration: 2.1,
        text: 'The report was approved on Monday.',
        segments: [
          {
            id: 0,
            seek: 0,
            start: 0,
            end: 0.9,
            text: ' The report',
            tokens: [50364, 440, 2275],
            temperature: 0,
            avg_logprob: -0.105,
            compression_ratio: 0.8,
            no_speech_prob: 0.01,
          },
          {
            id: 1,
            seek: 0,
            start: 0.9,
            end: 2.04,
            text: ' was approved on Monday.',
            tokens: [390, 10826, 322, 8138, 13],
            temperature: 0,
            avg_logprob: -0.4,
            compression_ratio: 0.9,
            no_speech_prob: 0.01,
          },
        ],
        words: [
          { word: 'The', start: 0, end: 0.2 },
          { word: 'report', start: 0.2, end: 0.9 },
          { word: 'was', start: 0.9, end: 1.1 },
          { word: 'approved', start: 1.1, end: 1.5 },
          { word: 'on', start: 1.5, end: 1.66 },
          { word: 'Monday', start: 1.66, end: 2.04 },
        ],
        usage: { type: 'duration', seconds: 3 },
      },
    });
    const transcript = await transcribeAudio(wav);

    const [request] = server.requests;
    assert.deepEqual(request!.fields.model, ['whisper-1']);
    assert.deepEqual(request!.fields.response_format, ['verbose_json']);
    assert.deepEqual(request!.fields['timestamp_granularities[]'], ['word', 'segment']);
    assert.equal(request!.file?.name, 'short.wav');
    assert.ok(request!.file.bytes.equals(await readFile(wav)), 'the server received the file as it is');

    assert.equal(transcript.duration_ms, 2100);
    assert.deepEqual(
      transcript.segments.map(({ start_ms, end_ms, text, words }) => ({ start_ms, end_ms, text, words: words.map((word) => word.word) })),
      [
        { start_ms: 0, end_ms: 900, text: 'The report', words: ['The', 'report'] },
        { start_ms: 900, end_ms: 2040, text: 'was approved on Monday.', words: ['was', 'approved', 'on', 'Monday'] },
      ],
    );
    assert.deepEqual(transcript.segments[1]!.words[3], { word: 'Monday', start_ms: 1660, end_ms: 2040, probability: Math.exp(-0.4) });
    assertPlausibleTimes(transcript.segments, transcript.duration_ms);
  });

  it('fails with invalid_file when the server cannot decode the file, and with a retryable error when it is down for a moment', async () => {
    server.answer({ status: 400, message: 'Invalid file format. Supported formats: [flac m4a mp3 mp4 mpeg mpga oga ogg wav webm]' });
    await assert.rejects(
      transcribeAudio(wav),
      (err: unknown) => err instanceof ExtractionError && err.code === 'invalid_file' && /Invalid file format/.test(err.message),
    );

    server.answer({ status: 503, message: 'The server is overloaded.' });
    await assert.rejects(transcribeAudio(wav), (err: unknown) => !(err instanceof ExtractionError) && /503/.test((err as Error).message));
  });
});
