/**
 * Transcription by an OpenAI-compatible server (`POST /audio/transcriptions`, verbose JSON with word and
 * segment timestamps), for deployments that would rather run speech-to-text there than in the sidecar.
 */
import { createReadStream } from 'node:fs';
import type { TranscriptionVerbose, TranscriptionWord } from 'openai/resources/audio/transcriptions';
import { classifyFailure } from '../../../../models/call-error.js';
import { openAiClient } from '../../../../models/providers/openai-client.js';
import type { TranscriptSegment } from '../content.js';
import { ExtractionError } from '../errors.js';
import type { Transcript } from './sidecar.js';

// Seconds of audio per second of waiting are the server's business; an hour-long file still ends.
const REQUEST_TIMEOUT_MS = 30 * 60_000;

export async function transcribeWithServer(path: string, model: string, env: NodeJS.ProcessEnv): Promise<Transcript> {
  let verbose: TranscriptionVerbose;
  try {
    verbose = await (
      await openAiClient(env)
    ).audio.transcriptions.create(
      { file: createReadStream(path), model, response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'] },
      { timeout: REQUEST_TIMEOUT_MS },
    );
  } catch (err) {
    const failure = await classifyFailure(err, 'openai', null);
    if (failure.retryable || failure.kind === 'cancelled') throw failure;
    // OpenAI answers 400 naming the file when it cannot decode it; any other refusal is the request's.
    const undecodable = failure.status === 400 && /file|audio|decod|format/i.test(failure.message);
    throw new ExtractionError(
      undecodable ? 'invalid_file' : 'transcription_failed',
      `The transcription server refused the file: ${failure.message}`,
    );
  }
  return transcriptOf(verbose);
}

/** The server's segments, each with the words that start within it (the API lists words apart from segments). */
export function transcriptOf(verbose: TranscriptionVerbose): Transcript {
  const words = [...(verbose.words ?? [])].sort((a, b) => a.start - b.start);
  const spans = verbose.segments ?? [];
  const segments: TranscriptSegment[] = spans.map((span, index) => {
    const last = index === spans.length - 1;
    const own = words.filter((word) => word.start >= span.start && (word.start < span.end || last));
    // OpenAI gives no per-word probability: the segment's mean token probability stands in for it (a server
    // that sends `probability`, as faster-whisper's do, is taken at its word).
    const fallback = clamp(Math.exp(span.avg_logprob ?? 0));
    return {
      start_ms: ms(span.start),
      end_ms: ms(span.end),
      text: span.text.trim(),
      words: own.map((word) => ({
        word: word.word.trim(),
        start_ms: ms(word.start),
        end_ms: ms(word.end),
        probability: probabilityOf(word, fallback),
      })),
    };
  });
  // A server that sends only words (or only text) still yields one segment spanning them.
  if (segments.length === 0 && verbose.text.trim()) {
    const end = words.at(-1)?.end ?? verbose.duration;
    segments.push({
      start_ms: ms(words[0]?.start ?? 0),
      end_ms: ms(end),
      text: verbose.text.trim(),
      words: words.map((word) => ({
        word: word.word.trim(),
        start_ms: ms(word.start),
        end_ms: ms(word.end),
        probability: probabilityOf(word, 1),
      })),
    });
  }
  return { segments, duration_ms: ms(verbose.duration) };
}

function probabilityOf(word: TranscriptionWord, fallback: number): number {
  const sent = (word as TranscriptionWord & { probability?: unknown }).probability;
  return typeof sent === 'number' && Number.isFinite(sent) ? clamp(sent) : fallback;
}

const ms = (seconds: number) => Math.max(0, Math.round(seconds * 1000));
const clamp = (value: number) => Math.min(1, Math.max(0, value));
