/**
 * @module Real audio files for the media tests, made at test time: speech from espeak-ng and a
 * tone from ffmpeg, encoded to mp3. Plus an ffmpeg decode to measure a stream's PCM length.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from '../../helpers/wait.ts';

const run = promisify(execFile);

export const SPEECH_TEXT =
  'Hello, this is a test of the paged resource stream for the voice assistant. ' +
  'The quick brown fox jumps over the lazy dog, and the music keeps playing while the next page is read. '.repeat(5);

/** A fresh temporary folder; remove it with `rm(dir, { recursive: true })`. */
export function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Speech mp3 (mono, 128 kb/s): about 40 s, a few hundred KB. */
export async function makeSpeechMp3(path: string): Promise<number> {
  const wav = `${path}.wav`;
  await run('espeak-ng', ['-w', wav, SPEECH_TEXT]);
  await run('ffmpeg', ['-loglevel', 'error', '-y', '-i', wav, '-ac', '1', '-b:a', '128k', path]);
  await rm(wav, { force: true });
  return (await stat(path)).size;
}

/** A sine tone mp3 of `seconds` at `kbps`. */
export async function makeToneMp3(path: string, seconds: number, kbps = 128): Promise<number> {
  await run('ffmpeg', [
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=440:duration=${seconds}`,
    '-ac',
    '1',
    '-b:a',
    `${kbps}k`,
    path,
  ]);
  return (await stat(path)).size;
}

/** Decodes any container ffmpeg reads to 16 kHz mono s16le and returns the PCM byte count. */
export function decodedPcmBytes(input: AsyncIterable<Uint8Array> | Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const ff = spawn(
      'ffmpeg',
      ['-loglevel', 'error', '-i', 'pipe:0', '-f', 's16le', '-ac', '1', '-ar', '16000', 'pipe:1'],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let bytes = 0;
    let stderr = '';
    ff.stdout.on('data', (d: Buffer) => (bytes += d.length));
    ff.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    ff.stdin.on('error', () => {}); // EPIPE when ffmpeg stops early: reported through the exit code
    ff.on('error', reject);
    ff.on('close', (code) => (code === 0 ? resolve(bytes) : reject(new Error(`ffmpeg exited ${code}: ${stderr}`))));
    void (async () => {
      try {
        if (Buffer.isBuffer(input)) ff.stdin.write(input);
        else {
          for await (const chunk of input) {
            if (!ff.stdin.write(chunk)) await new Promise((r) => ff.stdin.once('drain', r));
          }
        }
        ff.stdin.end();
      } catch (err) {
        ff.kill('SIGKILL');
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    })();
  });
}

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits up to `ms` for the process to be gone; fails naming `what` when it is not. */
export async function waitGone(pid: number, what: string, ms = 5000): Promise<void> {
  await waitFor(() => !alive(pid), { what, timeoutMs: ms });
}
