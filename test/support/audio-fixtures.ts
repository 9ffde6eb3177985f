/**
 * Spoken audio for the speech tests, synthesised on the spot: espeak-ng reads a sentence into a WAV, and
 * ffmpeg re-encodes it as AAC in an M4A (both installed by scripts/deps).
 */
import { execFile } from 'node:child_process';
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
