/**
 * Spoken audio for the speech tests, synthesised on the spot: espeak-ng reads a sentence into a WAV, and
 * ffmpeg re-encodes it as AAC in an M4A (both installed by scripts/deps).
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A WAV of espeak-ng's default voice (22,050 Hz, mono) saying `text`, written to `dir/name`. */
export async function spokenWav(dir: string, name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await run('espeak-ng', ['-w', path, text]);
  return path;
}

/** The WAV at `wav` re-encoded as AAC in an M4A container, written beside it. */
export async function m4aOf(wav: string): Promise<string> {
  const path = wav.replace(/\.wav$/, '') + '.m4a';
  await run('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-i', wav, '-c:a', 'aac', path]);
  return path;
}

/** The duration of a WAV espeak-ng wrote, in milliseconds, from its header. */
export function wavDurationMs(bytes: Buffer): number {
  const byteRate = bytes.readUInt32LE(28);
  const dataBytes = bytes.length - 44;
  return Math.round((dataBytes / byteRate) * 1000);
}

/**
 * Fourteen sentences, each with a word heard in no other (its key), for recordings longer than a window.
 * Distinct sentences: Whisper, hearing the same one again and again, falls back to sampling and may drop it.
 */
export const TALK: { sentence: string; key: string }[] = [
  { sentence: 'The quarterly report was approved in Berlin on Monday.', key: 'berlin' },
  { sentence: 'The finance team will meet again in Paris next week.', key: 'paris' },
  { sentence: 'Our new warehouse in Madrid opens in the spring with forty workers.', key: 'madrid' },
  { sentence: 'Sales of green tea rose by twelve percent after the summer campaign.', key: 'campaign' },
  { sentence: 'The board asked for a plan to cut travel costs before December.', key: 'december' },
  { sentence: 'A storm closed the harbour for two days and delayed three shipments.', key: 'storm' },
  { sentence: 'Next year the company will hire engineers in Lisbon and Warsaw.', key: 'lisbon' },
  { sentence: 'The museum on the hill shows paintings from the old city.', key: 'museum' },
  { sentence: 'Farmers in the valley expect a good harvest of apples and pears.', key: 'apples' },
  { sentence: 'A small bakery near the station sells bread until midnight.', key: 'midnight' },
  { sentence: 'The train to Vienna leaves every hour from platform seven.', key: 'platform' },
  { sentence: 'Students planted one hundred trees along the river last weekend.', key: 'weekend' },
  { sentence: 'The hospital bought two machines to scan patients faster.', key: 'hospital' },
  { sentence: 'Fresh snow in the mountains brought skiers back to the village.', key: 'snow' },
];

/**
 * A long recording, written to `dir/name`: espeak-ng saying each of `sentences` at the start of a span of
 * `everySeconds`, silence after it. Whisper hears only the speech (its voice filter skips the silence), so the
 * recording is long but cheap to transcribe.
 */
export async function spacedSpeechWav(dir: string, name: string, sentences: string[], everySeconds: number): Promise<string> {
  const spans: Buffer[] = [];
  let header = Buffer.alloc(0);
  for (const [i, sentence] of sentences.entries()) {
    const speech = await readFile(await spokenWav(dir, `${name}.${i}.wav`, sentence));
    header = speech.subarray(0, 44);
    const span = Buffer.alloc(everySeconds * header.readUInt32LE(28));
    speech.copy(span, 0, 44, Math.min(speech.length, 44 + span.length));
    spans.push(span);
  }
  const data = Buffer.concat(spans);
  const spaced = Buffer.from(header);
  spaced.writeUInt32LE(36 + data.length, 4);
  spaced.writeUInt32LE(data.length, 40);
  const path = join(dir, name);
  await writeFile(path, Buffer.concat([spaced, data]));
  return path;
}
