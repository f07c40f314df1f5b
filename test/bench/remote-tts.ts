/**
 * A remote TTS (an OpenAI-compatible `/audio/speech` stand-in in a thread of its own, speaking
 * real espeak-ng speech) into a session's media worker, as a turn speaks it:
 * - first audio: from the request to the first Opus packet, p50 (and p90) over 20 answers, with the
 *   body streamed (first audio after 150 ms, then 100 ms of audio every 50 ms) and sent whole after
 *   the same synthesis time, per `response_format`; "ours" is from the first body byte here to
 *   the first packet (decoding, resampling, encoding, the worker's round trip).
 * - Ogg/Opus decoded by ffmpeg in this thread's path against the media worker's decoder, also
 *   from a server that answers at once (where ffmpeg's start-up is not hidden by the synthesis).
 * - the main thread's CPU per second of TTS audio, with the audio decoded and resampled here
 *   (`synthesizePcm` into `encode`, the path before) and in the worker (`synthesizeOpus`).
 * Run alone: `npm run bench -- remote-tts`.
 */
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../core/start-worker.ts';
import { silentLogger } from '../../core/logger.ts';
import { createMediaEngine } from '../../audio/media/engine.ts';
import type { SessionMedia } from '../../audio/media/media.ts';
import { synthesizeOpus } from '../../audio/media/tts-to-opus.ts';
import { synthesizePcm } from '../../audio/tts/to-pcm.ts';
import type { StreamingTts } from '../../audio/tts/tts.ts';
import { OpenAiTtsSchema } from '../../providers/openai/options.ts';
import { OpenAiTts } from '../../providers/openai/tts.ts';
import type { FakeSpeechMode } from '../fixtures/fake-openai-audio.ts';

const TEXT = 'The quick brown fox jumps over the lazy dog, and runs into the woods.';
const ANSWERS = 20;
const CPU_ANSWERS = 20;
type Format = 'pcm' | 'wav' | 'opus' | 'mp3';
type Path = 'worker' | 'main';

interface Stand {
  baseURL: string;
  set(m: { mode?: FakeSpeechMode; pcmRate?: number }): Promise<void>;
  close(): void;
}

async function startStand(pacing: {
  chunkAudioMs: number;
  chunkDelayMs: number;
  firstChunkMs: number;
}): Promise<Stand> {
  const worker: Worker = startModuleWorker(import.meta.url, './sim/fake-speech-thread', { workerData: pacing });
  const baseURL = await new Promise<string>((resolve, reject) => {
    worker.once('message', (m: { baseURL: string }) => resolve(m.baseURL));
    worker.once('error', reject);
  });
  return {
    baseURL,
    set: (m) =>
      new Promise((resolve) => {
        worker.once('message', () => resolve());
        worker.postMessage(m);
      }),
    close: () => worker.postMessage({ close: true }),
  };
}

/** The provider, with the time its first body byte reached this thread. */
function timedTts(
  baseURL: string,
  format: Format,
  pcmSampleRate: number,
): { tts: StreamingTts; firstByte: () => number } {
  const inner = new OpenAiTts(
    OpenAiTtsSchema.parse({ provider: 'openai', baseURL, format, pcmSampleRate }),
    silentLogger,
  );
  let first = 0;
  const tts: StreamingTts = {
    name: inner.name,
    synthesis: 'stream',
    outputFormat: inner.outputFormat,
    async *synthesize(text, opts) {
      first = 0;
      for await (const c of inner.synthesize(text, opts)) {
        first ||= performance.now();
        yield c;
      }
    },
    close: () => inner.close(),
  };
  return { tts, firstByte: () => first };
}

function packetsOf(path: Path, tts: StreamingTts, media: SessionMedia, signal: AbortSignal): AsyncIterable<Buffer> {
  const opts = { sampleRate: 24_000, signal, log: silentLogger };
  return path === 'worker'
    ? synthesizeOpus(tts, TEXT, media, opts)
    : media.encode(synthesizePcm(tts, TEXT, opts), signal);
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))] as number;
};
const ms = (x: number): string => x.toFixed(0);

/** Request → first packet and first byte → first packet, over ANSWERS answers (each stopped at its first packet). */
async function firstAudio(
  stand: Stand,
  media: SessionMedia,
  format: Format,
  path: Path,
  mode: FakeSpeechMode,
): Promise<string> {
  await stand.set({ mode, pcmRate: 24_000 });
  const { tts, firstByte } = timedTts(stand.baseURL, format, 24_000);
  const total: number[] = [];
  const ours: number[] = [];
  for (let i = 0; i < ANSWERS + 2; i++) {
    const ac = new AbortController();
    const t0 = performance.now();
    for await (const _ of packetsOf(path, tts, media, ac.signal)) {
      const t = performance.now();
      if (i >= 2) {
        // The first two warm the path up.
        total.push(t - t0);
        ours.push(t - firstByte());
      }
      break;
    }
    ac.abort();
  }
  const where =
    path === 'worker'
      ? format === 'mp3'
        ? 'ffmpeg, then the worker'
        : 'media worker'
      : format === 'pcm' || format === 'wav'
        ? 'main thread'
        : 'ffmpeg';
  return `${format.padEnd(4)} ${mode === 'whole' ? 'whole body' : 'streamed  '} decoded by ${where.padEnd(24)} first packet p50 ${ms(pct(total, 0.5))} ms (p90 ${ms(pct(total, 0.9))}), of which ours p50 ${ms(pct(ours, 0.5))} ms (p90 ${ms(pct(ours, 0.9))})`;
}

/** The main thread's CPU per second of audio over CPU_ANSWERS whole answers. */
async function mainThreadCpu(
  stand: Stand,
  media: SessionMedia,
  format: Format,
  rate: number,
  path: Path,
): Promise<number> {
  await stand.set({ mode: 'ok', pcmRate: rate });
  const { tts } = timedTts(stand.baseURL, format, rate);
  const run = async (n: number): Promise<number> => {
    let packets = 0;
    for (let i = 0; i < n; i++)
      for await (const _ of packetsOf(path, tts, media, new AbortController().signal)) packets++;
    return packets;
  };
  await run(2);
  const before = process.threadCpuUsage();
  const packets = await run(CPU_ANSWERS);
  const used = process.threadCpuUsage(before);
  const audioS = (packets * 60) / 1000;
  return (used.user + used.system) / 1000 / audioS;
}

export async function run(): Promise<void> {
  const engine = await createMediaEngine({
    workers: 1,
    vadProvider: 'webrtc',
    espeak: { voice: 'en-us' },
    log: silentLogger,
  });
  const media = await engine.open(
    { vad: { threshold: 0.5, minSilenceMs: 700 }, downlinkSampleRate: 24_000, complexity: 5 },
    silentLogger,
  );
  const paced = await startStand({ chunkAudioMs: 100, chunkDelayMs: 50, firstChunkMs: 150 });
  const fast = await startStand({ chunkAudioMs: 100, chunkDelayMs: 0, firstChunkMs: 0 });
  try {
    console.log(
      `-- first audio: request → first Opus packet, ${ANSWERS} answers; the stand-in's first audio after 150 ms, then 100 ms of audio every 50 ms`,
    );
    console.log(await firstAudio(paced, media, 'pcm', 'worker', 'ok'));
    console.log(await firstAudio(paced, media, 'pcm', 'worker', 'whole'));
    console.log(await firstAudio(paced, media, 'wav', 'worker', 'ok'));
    console.log(await firstAudio(paced, media, 'opus', 'worker', 'ok'));
    console.log(await firstAudio(paced, media, 'opus', 'main', 'ok'));
    console.log(await firstAudio(paced, media, 'opus', 'worker', 'whole'));
    console.log(await firstAudio(paced, media, 'mp3', 'worker', 'ok'));
    console.log(
      '-- the same, from a server that has the whole answer at once (no synthesis wait to hide a start-up in)',
    );
    console.log(await firstAudio(fast, media, 'pcm', 'worker', 'ok'));
    console.log(await firstAudio(fast, media, 'opus', 'worker', 'ok'));
    console.log(await firstAudio(fast, media, 'opus', 'main', 'ok'));
    console.log(await firstAudio(fast, media, 'mp3', 'worker', 'ok'));
    if (typeof process.threadCpuUsage !== 'function') {
      console.log('-- main thread CPU: skipped (process.threadCpuUsage needs Node 23.9 or later)');
      return;
    }
    console.log(
      `-- the main thread's CPU per second of TTS audio (${CPU_ANSWERS} answers, the stand-in in its own thread)`,
    );
    for (const [format, rate] of [
      ['pcm', 24_000],
      ['pcm', 22_050],
      ['wav', 24_000],
      ['opus', 24_000],
    ] as Array<[Format, number]>) {
      const main = await mainThreadCpu(fast, media, format, rate, 'main');
      const worker = await mainThreadCpu(fast, media, format, rate, 'worker');
      const label = `${format}${format === 'pcm' ? ` ${rate} Hz` : ''}`.padEnd(13);
      const before = format === 'opus' ? 'ffmpeg, PCM read here' : 'decoded/resampled here';
      console.log(`${label} ${before}: ${main.toFixed(2)} ms  →  in the media worker: ${worker.toFixed(2)} ms`);
    }
  } finally {
    paced.close();
    fast.close();
    media.close();
    await engine.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
