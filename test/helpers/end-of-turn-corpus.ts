/**
 * Runs the end-of-turn corpus (test/fixtures/end-of-turn/corpus.ts) through the real listener:
 * each utterance spoken by espeak-ng, encoded to 60 ms Opus packets, decoded and scored by Silero
 * in-process, and ended by `voice/turn-end/` from a streaming recogniser's partials.
 *
 * The recogniser is emulated in audio time: every `everyMs` of audio it gives the words whose
 * end lies `latencyMs` or more behind (word ends spread over each part by their characters). The
 * listener measures silence on the samples it decodes, so the packets are fed as fast as the VAD
 * takes them and the figures do not depend on the machine's speed: the decision's position in
 * the audio is exact to a packet (60 ms).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../../core/logger.ts';
import { createMediaEngine } from '../../audio/media/engine.ts';
import type { MediaEngine } from '../../audio/media/media.ts';
import { createOpusCodec } from '../../audio/opus/codec.ts';
import { concatInt16 } from '../../audio/pcm/pcm.ts';
import { resample } from '../../audio/pcm/resample.ts';
import { Listener, type ListenerEvent } from '../../voice/conversation/listener.ts';
import {
  EndOfTurn,
  type EndOfTurnSettings,
  longestSilenceMs,
  shortestSilenceMs,
} from '../../voice/turn-end/end-of-turn.ts';
import { trimSilence } from '../bench/sim/device.ts';
import type { CorpusItem } from '../fixtures/end-of-turn/corpus.ts';

export interface CorpusSettings extends EndOfTurnSettings {
  earlyStartMs: number;
}

/** How the emulated streaming recogniser lags the audio. */
export interface PartialModel {
  /** A word shows in the partial this long after it ends. */
  latencyMs: number;
  /** Audio between two partials. */
  everyMs: number;
}

export interface ItemResult {
  item: CorpusItem;
  /** Where the end of turn ended the utterance (ms of audio); undefined: it never did. */
  decidedAtMs: number | undefined;
  /** The last voiced sample of the whole utterance (ms of audio). */
  speechEndMs: number;
  /** Where the second part starts, for an utterance with a pause. */
  resumeAtMs: number | undefined;
  /** Ended at the inner pause. */
  cut: boolean;
}

const RATE = 16000;
const LEAD_MS = 500;
const TAIL_MS = 2500;
const PACKET_MS = 60;

function speak(text: string, lang: 'en' | 'zh'): Int16Array {
  const dir = mkdtempSync(join(tmpdir(), 'eot-'));
  const file = join(dir, 'u.wav');
  try {
    execFileSync('espeak-ng', ['-v', lang === 'zh' ? 'cmn' : 'en-us', '-w', file, text]);
    const buf = readFileSync(file);
    const rate = buf.readUInt32LE(24);
    const data = buf.subarray(44);
    const pcm = new Int16Array(data.length >> 1);
    for (let i = 0; i < pcm.length; i++) pcm[i] = data.readInt16LE(i * 2);
    return trimSilence(rate === RATE ? pcm : resample(pcm, rate, RATE));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Words (English) or characters (Chinese) with the time each ends, spread over the part by characters. */
function timeline(
  text: string,
  lang: 'en' | 'zh',
  startMs: number,
  durationMs: number,
): Array<{ token: string; endMs: number }> {
  const tokens = lang === 'zh' ? [...text] : text.split(/\s+/).filter((w) => w !== '');
  const total = tokens.reduce((n, t) => n + t.length, 0);
  let seen = 0;
  return tokens.map((token) => {
    seen += token.length;
    return { token, endMs: startMs + (durationMs * seen) / total };
  });
}

interface Prepared {
  packets: Buffer[];
  words: Array<{ token: string; endMs: number }>;
  speechEndMs: number;
  resumeAtMs: number | undefined;
}

async function prepare(item: CorpusItem): Promise<Prepared> {
  const [a, b] = item.parts;
  const first = speak(a, item.lang);
  const firstMs = (first.length / RATE) * 1000;
  const words = timeline(a, item.lang, LEAD_MS, firstMs);
  const pieces = [new Int16Array((RATE * LEAD_MS) / 1000), first];
  let speechEndMs = LEAD_MS + firstMs;
  let resumeAtMs: number | undefined;
  if (b !== undefined) {
    const second = speak(b, item.lang);
    resumeAtMs = speechEndMs + (item.pauseMs ?? 0);
    pieces.push(new Int16Array(Math.round((RATE * (item.pauseMs ?? 0)) / 1000)), second);
    const secondMs = (second.length / RATE) * 1000;
    words.push(...timeline(b, item.lang, resumeAtMs, secondMs));
    speechEndMs = resumeAtMs + secondMs;
  }
  pieces.push(new Int16Array((RATE * TAIL_MS) / 1000));
  const pcm = concatInt16(pieces);
  const codec = await createOpusCodec({ sampleRate: RATE });
  try {
    const frame = codec.frameSamples;
    const packets: Buffer[] = [];
    for (let i = 0; i < pcm.length; i += frame) {
      const f = new Int16Array(frame);
      f.set(pcm.subarray(i, Math.min(pcm.length, i + frame)));
      packets.push(Buffer.from(codec.encode(f)));
    }
    return { packets, words, speechEndMs, resumeAtMs };
  } finally {
    codec.close();
  }
}

async function idle(listener: Listener): Promise<void> {
  while (listener.pending > 0) await new Promise((r) => setImmediate(r));
}

async function runItem(
  engine: MediaEngine,
  p: Prepared,
  item: CorpusItem,
  s: CorpusSettings,
  model: PartialModel,
  log: Logger,
): Promise<ItemResult> {
  const media = await engine.open(
    {
      vad: {
        threshold: 0.5,
        minSilenceMs: longestSilenceMs(s),
        minSpeechMs: 250,
        pauseMs: shortestSilenceMs(s, s.earlyStartMs),
      },
      downlinkSampleRate: 24000,
      complexity: 5,
    },
    log,
  );
  let decidedAtMs: number | undefined;
  let fed = 0;
  const listener = new Listener({
    media,
    log,
    preRollMs: 300,
    maxUtteranceMs: 30_000,
    endOfTurn: new EndOfTurn(s, log),
    earlyStartMs: s.earlyStartMs,
    onEvent: (e: ListenerEvent) => {
      if (e.type === 'utterance' && decidedAtMs === undefined) decidedAtMs = fed * PACKET_MS;
    },
  });
  try {
    listener.start('auto');
    let lastPartialAt = 0;
    let lastText = '';
    for (const packet of p.packets) {
      fed++;
      listener.push(packet);
      await idle(listener);
      if (decidedAtMs !== undefined) break;
      const at = fed * PACKET_MS;
      if (at - lastPartialAt >= model.everyMs) {
        lastPartialAt = at;
        const heard = p.words.filter((w) => w.endMs <= at - model.latencyMs).map((w) => w.token);
        const text = heard.join(item.lang === 'zh' ? '' : ' ');
        if (text !== lastText) {
          lastText = text;
          listener.transcript(text);
          if (decidedAtMs !== undefined) break;
        }
      }
    }
  } finally {
    listener.close();
    media.close();
  }
  const cut = p.resumeAtMs !== undefined && decidedAtMs !== undefined && decidedAtMs < p.resumeAtMs;
  return { item, decidedAtMs, speechEndMs: p.speechEndMs, resumeAtMs: p.resumeAtMs, cut };
}

/** Speaks every item once, then runs each under every settings in `runs` (same audio for all). */
export async function runCorpus(
  items: readonly CorpusItem[],
  runs: readonly CorpusSettings[],
  model: PartialModel,
  log: Logger,
): Promise<ItemResult[][]> {
  const prepared = await Promise.all(items.map((item) => prepare(item)));
  const engine = await createMediaEngine({ workers: 0, vadProvider: 'silero', espeak: { voice: 'en-us' }, log });
  try {
    const out: ItemResult[][] = [];
    for (const s of runs) {
      const results: ItemResult[] = [];
      for (const [i, item] of items.entries())
        results.push(await runItem(engine, prepared[i] as Prepared, item, s, model, log));
      out.push(results);
    }
    return out;
  } finally {
    await engine.close();
  }
}

export interface CorpusSummary {
  paused: number;
  cuts: number;
  cutRate: number;
  /** End-of-turn delay of the utterances said in one go: decision − last voiced sample (ms). */
  delays: number[];
  p50: number;
  p95: number;
  /** Items the end of turn never ended (must be none). */
  unended: number;
}

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}

export function summarize(results: readonly ItemResult[]): CorpusSummary {
  const paused = results.filter((r) => r.resumeAtMs !== undefined);
  const cuts = paused.filter((r) => r.cut).length;
  const delays = results
    .filter((r) => r.resumeAtMs === undefined && r.decidedAtMs !== undefined)
    .map((r) => Math.round((r.decidedAtMs as number) - r.speechEndMs))
    .sort((a, b) => a - b);
  return {
    paused: paused.length,
    cuts,
    cutRate: paused.length === 0 ? 0 : cuts / paused.length,
    delays,
    p50: percentile(delays, 0.5),
    p95: percentile(delays, 0.95),
    unended: results.filter((r) => r.decidedAtMs === undefined).length,
  };
}
