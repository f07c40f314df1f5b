/** ffmpeg's decode of an Ogg file (from memory) to 16 kHz mono PCM, with what it complained about. */
import { spawnSync } from 'node:child_process';

export function ffmpegDecodeOgg(ogg: Buffer): { pcm: Int16Array; stderr: string; status: number | null; rms: number } {
  const r = spawnSync(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'ogg',
      '-i',
      'pipe:0',
      '-f',
      's16le',
      '-ac',
      '1',
      '-ar',
      '16000',
      'pipe:1',
    ],
    { input: ogg, maxBuffer: 64 * 1024 * 1024 },
  );
  const bytes = r.stdout;
  const pcm = new Int16Array(bytes.buffer, bytes.byteOffset, Math.floor(bytes.length / 2));
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return { pcm, stderr: r.stderr.toString(), status: r.status, rms: pcm.length > 0 ? Math.sqrt(sum / pcm.length) : 0 };
}
