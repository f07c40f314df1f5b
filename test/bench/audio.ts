/**
 * Audio engine figures (single thread unless stated): Opus encode/decode frames/s at 16 and
 * 24 kHz per backend and complexity, VAD cost per frame, full-duplex sessions per core
 * (uplink decode 16 kHz + VAD + downlink encode 24 kHz), ffmpeg real-time factor, espeak-ng
 * first byte and the TTS→PCM paths, and the cadence of 100 concurrent pacers.
 */
import { execFileSync } from 'node:child_process';
import { createOpusCodec, type OpusBackend, type OpusApplication } from '../../audio/opus/codec.ts';
import { createVadModel, type VadProvider } from '../../audio/vad/vad.ts';
import { createSileroModel } from '../../audio/vad/silero.ts';
import { transcodeToPcm } from '../../audio/ffmpeg/transcode.ts';
import { loadEspeakEngine } from '../../audio/tts/espeak-wasm.ts';
import { ttsToPcm } from '../../audio/tts/to-pcm.ts';
import { createPacer } from '../../audio/pacer/pacer.ts';
import { resample } from '../../audio/pcm/resample.ts';
import { WavStreamParser } from '../../audio/pcm/wav.ts';
import { createMediaEngine } from '../../audio/media/engine.ts';
import { silentLogger } from '../../core/logger.ts';

const TEXT = 'What is the weather today? Turn the volume up to fifty percent, and then play some music.';
const never = new AbortController().signal;

function espeakSpeech(rate: number): Int16Array {
  const wav = execFileSync('espeak-ng', ['-v', 'en-us', '--stdout', Array(3).fill(TEXT).join(' ')]);
  const p = new WavStreamParser();
  const pcm = p.push(wav);
  return resample(pcm, p.format?.sampleRate ?? 22050, rate);
}

function frames(pcm: Int16Array, n: number): Int16Array[] {
  const out: Int16Array[] = [];
  for (let at = 0; at + n <= pcm.length; at += n) out.push(pcm.slice(at, at + n));
  return out;
}

/** Runs `fn` repeatedly for ~ms; returns calls per second (median of 3 runs). */
function rate(fn: () => void, ms = 400): number {
  const results: number[] = [];
  for (let r = 0; r < 3; r++) {
    let n = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < ms) {
      fn();
      n++;
    }
    results.push((n * 1000) / (performance.now() - t0));
  }
  return results.sort((a, b) => a - b)[1] as number;
}

const fmt = (x: number, d = 0): string =>
  x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

async function opusFigures(speech: Record<number, Int16Array>): Promise<void> {
  console.log('-- Opus, 60 ms mono frames, one core (frames/s; "streams" = real-time enc+dec streams per core)');
  for (const backend of ['native', 'wasm'] as OpusBackend[]) {
    for (const [complexity, application] of [
      [9, 'audio'],
      [5, 'audio'],
      [5, 'voip'],
      [1, 'voip'],
    ] as Array<[number, OpusApplication]>) {
      for (const sr of [16000, 24000] as const) {
        const codec = await createOpusCodec({ sampleRate: sr, prefer: backend, complexity, application });
        const fs = frames(speech[sr] as Int16Array, codec.frameSamples);
        const packets = fs.map((f) => codec.encode(f));
        let i = 0;
        const enc = rate(() => codec.encode(fs[i++ % fs.length] as Int16Array));
        let j = 0;
        const dec = rate(() => codec.decode(packets[j++ % packets.length] as Buffer));
        const bytes = packets.reduce((a, p) => a + p.length, 0) / packets.length;
        const both = 1 / (1 / enc + 1 / dec);
        console.log(
          `opus ${backend.padEnd(6)} c${complexity} ${application.padEnd(5)} ${sr / 1000} kHz: encode ${fmt(enc).padStart(6)} fps, decode ${fmt(dec).padStart(6)} fps, ${fmt(bytes)} B/packet, streams ${fmt(both * 0.06)}`,
        );
        codec.close();
      }
    }
  }
}

async function vadFigures(speech16k: Int16Array): Promise<void> {
  console.log('-- VAD (16 kHz speech; per model frame)');
  for (const provider of ['silero', 'webrtc'] as VadProvider[]) {
    const model = await createVadModel({ provider });
    const stream = model.createStream({ threshold: 0.5, minSilenceMs: 500 });
    const chunks = frames(speech16k, 960);
    const t0 = performance.now();
    let pushed = 0;
    for (let rep = 0; rep < 3; rep++)
      for (const c of chunks) {
        await stream.push(c);
        pushed += c.length;
      }
    const ms = performance.now() - t0;
    const modelFrames = pushed / model.frameSamples;
    const audioS = pushed / 16000;
    console.log(
      `vad ${provider.padEnd(6)}: ${fmt((ms * 1000) / modelFrames, 1)} µs per ${model.frameSamples}-sample frame, ${fmt(ms / audioS, 2)} ms CPU per audio second`,
    );
    stream.close();
    await model.close();
  }
}

async function sessionFigures(speech: Record<number, Int16Array>): Promise<void> {
  console.log('-- Full-duplex session cost: decode 16 kHz uplink + VAD + encode 24 kHz downlink, every 60 ms');
  const up = frames(speech[16000] as Int16Array, 960);
  const down = frames(speech[24000] as Int16Array, 1440);
  for (const vadProvider of ['silero', 'webrtc'] as VadProvider[]) {
    const model = await createVadModel({ provider: vadProvider });
    for (const [complexity, application] of [
      [9, 'audio'],
      [5, 'voip'],
      [5, 'audio'],
    ] as Array<[number, OpusApplication]>) {
      const upEnc = await createOpusCodec({ sampleRate: 16000, complexity: 0 });
      const packets = up.map((f) => upEnc.encode(f));
      const dec = await createOpusCodec({ sampleRate: 16000 });
      const enc = await createOpusCodec({ sampleRate: 24000, complexity, application });
      const vad = model.createStream({ threshold: 0.5, minSilenceMs: 500 });
      const n = Math.min(packets.length, down.length);
      const t0 = performance.now();
      let steps = 0;
      for (let rep = 0; rep < 3; rep++) {
        for (let i = 0; i < n; i++) {
          const pcm = dec.decode(packets[i] as Buffer);
          if (pcm) await vad.push(pcm);
          enc.encode(down[i] as Int16Array);
          steps++;
        }
      }
      const ms = performance.now() - t0;
      const perSessionSecond = ms / ((steps * 60) / 1000);
      console.log(
        `session ${vadProvider.padEnd(6)} + ${enc.backend} c${complexity} ${application.padEnd(5)}: ${fmt(perSessionSecond, 1)} ms CPU per session-second → ${fmt(1000 / perSessionSecond)} sessions per core`,
      );
      vad.close();
      for (const c of [upEnc, dec, enc]) c.close();
    }
    await model.close();
  }
}

/**
 * Many sessions in one thread, as in a media worker: each 60 ms tick every session decodes its
 * packet, pushes it to its VAD (Silero steps of all sessions then share model runs) and encodes
 * a downlink frame. CPU time per session-second, and the model's runs per step.
 */
async function concurrentSessionFigures(speech: Record<number, Int16Array>): Promise<void> {
  const up = frames(speech[16000] as Int16Array, 960);
  const down = frames(speech[24000] as Int16Array, 1440);
  const model = await createSileroModel({ provider: 'silero' });
  for (const count of [1, 10, 25, 50]) {
    const upEnc = await createOpusCodec({ sampleRate: 16000, complexity: 0 });
    const packets = up.map((f) => upEnc.encode(f));
    upEnc.close();
    const sessions = await Promise.all(
      Array.from({ length: count }, async (_, k) => ({
        dec: await createOpusCodec({ sampleRate: 16000 }),
        enc: await createOpusCodec({ sampleRate: 24000, complexity: 5, application: 'audio' }),
        vad: model.createStream({ threshold: 0.5, minSilenceMs: 500 }),
        // Each session starts elsewhere in the speech, so they are not in lockstep.
        offset: Math.floor((k * packets.length) / count),
      })),
    );
    const n = Math.min(packets.length, down.length);
    const runs0 = model.batcher.runs;
    const steps0 = model.batcher.steps;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      const pushes: Array<Promise<unknown>> = [];
      for (const s of sessions) {
        const j = (i + s.offset) % n;
        const pcm = s.dec.decode(packets[j] as Buffer);
        if (pcm) pushes.push(s.vad.push(pcm));
        s.enc.encode(down[j] as Int16Array);
      }
      await Promise.all(pushes);
    }
    const cpu = process.cpuUsage(cpu0);
    const perSessionSecond = (cpu.user + cpu.system) / 1000 / (count * ((n * 60) / 1000));
    const runs = model.batcher.runs - runs0;
    const steps = model.batcher.steps - steps0;
    console.log(
      `${String(count).padStart(2)} sessions in one thread (silero + native c5 audio): ${fmt(perSessionSecond, 1)} ms CPU per session-second → ${fmt(1000 / perSessionSecond)} sessions per core; ${fmt(steps / Math.max(1, runs), 1)} VAD steps per model run`,
    );
    for (const s of sessions) {
      s.vad.close();
      s.dec.close();
      s.enc.close();
    }
  }
  await model.close();
}

async function ffmpegFigures(speech24k: Int16Array): Promise<void> {
  console.log('-- ffmpeg (spawned per stream) and TTS paths');
  const tmp = execFileSync('mktemp', ['-d']).toString().trim();
  const raw = `${tmp}/s.raw`;
  const mp3 = `${tmp}/s.mp3`;
  execFileSync('sh', ['-c', `cat > ${raw}`], {
    input: Buffer.from(speech24k.buffer, speech24k.byteOffset, speech24k.byteLength),
  });
  execFileSync('ffmpeg', [
    '-loglevel',
    'error',
    '-f',
    's16le',
    '-ar',
    '24000',
    '-ac',
    '1',
    '-i',
    raw,
    '-b:a',
    '64k',
    mp3,
  ]);
  const mp3Bytes = execFileSync('cat', [mp3]);
  execFileSync('rm', ['-rf', tmp]);
  const audioS = speech24k.length / 24000;
  const firsts: number[] = [];
  const totals: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    let first = 0;
    for await (const _ of transcodeToPcm(mp3Bytes, { sampleRate: 24000, signal: never }))
      if (first === 0) first = performance.now() - t0;
    firsts.push(first);
    totals.push(performance.now() - t0);
  }
  const med = (a: number[]): number => a.sort((x, y) => x - y)[Math.floor(a.length / 2)] as number;
  console.log(
    `ffmpeg mp3 → PCM 24 kHz (${fmt(audioS, 1)} s of speech): first PCM ${fmt(med(firsts), 1)} ms, total ${fmt(med(totals), 1)} ms, RTF ${fmt(med(totals) / 1000 / audioS, 4)}`,
  );

  // espeak-ng as WebAssembly (the embedded TTS): warmed up first, as the media workers do.
  const engine = await loadEspeakEngine();
  const speak = (): Int16Array[] => {
    const chunks: Int16Array[] = [];
    engine.synthesize(TEXT, { voice: 'en-us' }, (c) => chunks.push(c));
    return chunks;
  };
  async function* bytesOf(chunks: Int16Array[]): AsyncGenerator<Buffer> {
    for (const c of chunks) yield Buffer.from(c.buffer, c.byteOffset, c.byteLength);
  }
  for (let i = 0; i < 15; i++) speak();
  const eTotal: number[] = [];
  const pTotal: number[] = [];
  for (let r = 0; r < 7; r++) {
    let t0 = performance.now();
    speak();
    eTotal.push(performance.now() - t0);
    t0 = performance.now();
    for await (const _ of ttsToPcm(
      bytesOf(speak()),
      { container: 'pcm', sampleRate: engine.sampleRate },
      { sampleRate: 24000, signal: never },
    ))
      void _;
    pTotal.push(performance.now() - t0);
  }
  console.log(`espeak-ng (WASM, warm) synthesis of a 5.5 s sentence: ${fmt(med(eTotal), 1)} ms CPU, no process`);
  console.log(`  … → PCM 24 kHz (resampled in-process): ${fmt(med(pTotal), 1)} ms`);
  // What a media worker does per sentence (text → 24 kHz Opus packets), with each espeak-ng engine.
  for (const espeakEngine of ['wasm', 'native'] as const) {
    const engine = await createMediaEngine({
      workers: 0,
      vadProvider: 'webrtc',
      espeak: { voice: 'en-us' },
      espeakEngine,
      log: silentLogger,
    });
    const media = await engine.open(
      { vad: { threshold: 0.5, minSilenceMs: 700 }, downlinkSampleRate: 24000, complexity: 5 },
      silentLogger,
    );
    const oTotal: number[] = [];
    for (let r = 0; r < 7; r++) {
      const t0 = performance.now();
      for await (const _ of media.speak(TEXT, never)) void _;
      oTotal.push(performance.now() - t0);
    }
    media.close();
    await engine.close();
    const how =
      espeakEngine === 'native'
        ? 'native helper (resamples too), one long-lived process'
        : 'WASM in the thread, JavaScript resampler';
    console.log(`media.speak, 5.5 s sentence → Opus packets, espeak-ng ${how}: ${fmt(med(oTotal), 1)} ms`);
  }
  const big = speech24k;
  const t0 = performance.now();
  resample(big, 24000, 16000);
  const rs = performance.now() - t0;
  console.log(`in-process resampler 24 → 16 kHz: ${fmt((rs / (big.length / 24000)) * 1, 2)} ms CPU per audio second`);
}

/** A fresh media worker, as at server start: how long each of its first sentences takes to speak. */
async function workerSpeakFigures(espeakEngine: 'native' | 'wasm'): Promise<void> {
  console.log(
    `-- Media worker (1 thread, fresh, espeak-ng ${espeakEngine}): three sessions speak the same three sentences in turn`,
  );
  const engine = await createMediaEngine({
    workers: 1,
    workerNice: 0,
    vadProvider: 'webrtc',
    espeak: { voice: 'en-us' },
    espeakEngine,
    log: silentLogger,
  });
  const never = new AbortController().signal;
  const sentences = ['It is sunny today.', 'The high is twenty two degrees.', 'Enjoy your day!'];
  try {
    for (let k = 0; k < 3; k++) {
      const media = await engine.open(
        { vad: { threshold: 0.5, minSilenceMs: 700 }, downlinkSampleRate: 24000, complexity: 5 },
        silentLogger,
      );
      const firsts: string[] = [];
      const totals: string[] = [];
      for (const text of sentences) {
        const t0 = performance.now();
        let first = 0;
        for await (const _ of media.speak(text, never, true)) if (first === 0) first = performance.now() - t0;
        firsts.push(fmt(first, 1));
        totals.push(fmt(performance.now() - t0, 1));
      }
      media.close();
      console.log(`session ${k + 1}: first packet ${firsts.join(' / ')} ms, whole sentence ${totals.join(' / ')} ms`);
    }
  } finally {
    await engine.close();
  }
}

async function pacerFigures(): Promise<void> {
  console.log(
    '-- Pacer: 100 concurrent pacers (starts spread over 1 s), 60 ms frames, 5 s each, each frame Opus-encoded (24 kHz c5) on the same event loop',
  );
  const codec = await createOpusCodec({ sampleRate: 24000, complexity: 5 });
  const pcm = new Int16Array(1440);
  const controllers = Array.from({ length: 100 }, () => new AbortController());
  const pacers = controllers.map((ac) => createPacer({ frameMs: 60, send: () => {}, signal: ac.signal }));
  async function* framesFor(n: number): AsyncGenerator<Buffer> {
    for (let i = 0; i < n; i++) yield codec.encode(pcm); // real encode work per frame
  }
  const t0 = performance.now();
  await Promise.all(pacers.map((p, i) => new Promise((r) => setTimeout(r, i * 10)).then(() => p.play(framesFor(84)))));
  const wall = performance.now() - t0;
  for (const ac of controllers) ac.abort();
  const late = pacers.map((p) => p.stats.maxLateMs);
  const sent = pacers.reduce((a, p) => a + p.stats.framesSent, 0);
  const lateFrames = pacers.reduce((a, p) => a + p.stats.lateFrames, 0);
  const underruns = pacers.reduce((a, p) => a + p.stats.underruns, 0);
  console.log(
    `pacer ×100: ${sent} frames in ${fmt(wall / 1000, 2)} s; per-pacer max lateness: mean ${fmt(late.reduce((a, b) => a + b, 0) / late.length, 1)} ms, worst ${fmt(Math.max(...late), 1)} ms; late frames (>20 ms) ${lateFrames} (${fmt((100 * lateFrames) / sent, 2)} %); device underruns ${underruns}`,
  );
  codec.close();
}

export async function run(): Promise<void> {
  const speech = { 16000: espeakSpeech(16000), 24000: espeakSpeech(24000) };
  await opusFigures(speech);
  await vadFigures(speech[16000]);
  await sessionFigures(speech);
  await concurrentSessionFigures(speech);
  await ffmpegFigures(speech[24000]);
  await workerSpeakFigures('native');
  await workerSpeakFigures('wasm');
  await pacerFigures();
}
