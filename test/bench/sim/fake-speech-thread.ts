/**
 * The OpenAI-compatible speech stand-in (`test/fixtures/fake-openai-audio.ts`, real espeak-ng
 * speech) in a worker thread of its own, so that a bench can count the main thread's CPU without
 * the stand-in's. `workerData`: the stand-in's pacing. Posts `{ baseURL }` once it listens; takes
 * `{ mode, pcmRate }` messages (the speech mode, and the rate its `pcm` answers are at) and
 * answers each with `{ ok: true }`; `{ close: true }` stops it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { int16ToBuffer } from '../../../audio/pcm/pcm.ts';
import { resample } from '../../../audio/pcm/resample.ts';
import { startFakeOpenAiAudio, type FakeSpeechMode } from '../../fixtures/fake-openai-audio.ts';
import { bytesPerMs, speech24k, speechIn } from '../../fixtures/tts-speech.ts';

const o = workerData as { chunkAudioMs: number; chunkDelayMs: number; firstChunkMs: number };
let pcmRate = 24_000;
const pcmAt = new Map<string, Buffer>();

const fake = await startFakeOpenAiAudio({
  speechAudio: (format, input) => {
    if (format !== 'pcm' || pcmRate === 24_000) return speechIn(format, input);
    const key = `${pcmRate}\u0000${input}`;
    let b = pcmAt.get(key);
    if (!b) pcmAt.set(key, (b = int16ToBuffer(resample(speech24k(input), 24_000, pcmRate))));
    return b;
  },
  chunkBytes: (format) => {
    const bytes = bytesPerMs(format, o.chunkAudioMs);
    return format === 'pcm' ? Math.round((bytes * pcmRate) / 24_000 / 2) * 2 : bytes;
  },
  chunkDelayMs: o.chunkDelayMs,
  firstChunkMs: o.firstChunkMs,
});
parentPort?.on('message', (m: { mode?: FakeSpeechMode; pcmRate?: number; close?: boolean }) => {
  if (m.close) {
    void fake.close().then(() => parentPort?.close());
    return;
  }
  if (m.mode) fake.speechMode = m.mode;
  if (m.pcmRate) pcmRate = m.pcmRate;
  parentPort?.postMessage({ ok: true });
});
parentPort?.postMessage({ baseURL: fake.baseURL });
