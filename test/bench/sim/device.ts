/**
 * One simulated xiaozhi device of the fleet, doing what the 78/xiaozhi-esp32 firmware does
 * (docs/simulate.md lists the steps; mqtt-device.ts is the same device on MQTT+UDP): OTA POST with the firmware's headers and body, the WebSocket
 * with Authorization / Protocol-Version / Device-Id / Client-Id headers, hello (Opus 16 kHz mono
 * 60 ms, features.mcp), answering the server's MCP requests, and spoken turns in auto mode:
 * `listen start`, real Opus speech paced at real time on a drift-free schedule, encoded silence
 * until `stt`, then the answer (`tts start`, `sentence_start`, frames, `tts stop`).
 */
import { createOpusCodec } from '../../../audio/opus/codec.ts';
import { concatInt16 } from '../../../audio/pcm/pcm.ts';
import type { ProtocolVersion } from '../../../protocol/framing.ts';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { STOCK_TOOLS } from '../../fixtures/firmware/mcp-server.ts';
import { FIRMWARE_2_4_2, otaHeaders, systemInfoJson } from '../../fixtures/firmware/ota.ts';
import { speak16k } from '../../helpers/speech.ts';
import { playbackStats, sleep, type PlaybackStats } from './stats.ts';
import { VOICE_WINDOW_SAMPLES, voicedWindows, voiceEndSample } from './voiced.ts';

export const FRAME_MS = 60;
const FRAME_SAMPLES_16K = 960;

/** A spoken utterance as the firmware would send it, and the encoded silence that follows. */
export interface UtteranceAudio {
  /** Lead-in silence plus speech: the last packet holds the end of speech. */
  speech: Buffer[];
  /** Encoded silence right after the speech (the encoder continues), then `silenceLoop` repeats. */
  tail: Buffer[];
  silenceLoop: Buffer[];
  speechMs: number;
  /**
   * The end of the user's voice: ms from the first sample of the first packet to the end of the
   * last voiced 10 ms window of the PCM that was encoded (`voiceEndSample`).
   */
  voiceEndMs: number;
}

/**
 * Cuts the synthesizer's own leading and trailing near-silence (10 ms windows under 2 % of the
 * loudest window's RMS, `voicedWindows`), so that the last speech packet really ends with the last word.
 */
export function trimSilence(pcm: Int16Array, windowSamples = VOICE_WINDOW_SAMPLES): Int16Array {
  const w = voicedWindows(pcm, windowSamples);
  if (!w) return pcm;
  return pcm.subarray(w.first * windowSamples, Math.min(pcm.length, (w.last + 1) * windowSamples));
}

/** Synthesizes `text` (flite, espeak-ng as a fallback) and encodes it with one continuous Opus encoder. */
/** The speech of `text` the simulated devices say (flite, espeak-ng as a fallback), trimmed, 16 kHz. */
export function utteranceSpeech(text: string): Int16Array {
  let speech: Int16Array;
  try {
    speech = speak16k(text, 'flite');
  } catch {
    speech = speak16k(text, 'espeak');
  }
  return trimSilence(speech);
}

export async function prepareUtterance(text: string, leadMs = 300): Promise<UtteranceAudio> {
  const speech = utteranceSpeech(text);
  const codec = await createOpusCodec({ sampleRate: 16000 });
  try {
    const voiced = concatInt16([new Int16Array(16 * leadMs), speech]);
    const speechPackets = Math.ceil(voiced.length / FRAME_SAMPLES_16K);
    const tailPackets = 30;
    const loopPackets = 10;
    const pcm = concatInt16([
      voiced,
      new Int16Array((speechPackets + tailPackets + loopPackets) * FRAME_SAMPLES_16K - voiced.length),
    ]);
    const voiceEnd = voiceEndSample(pcm);
    if (voiceEnd === null) throw new Error(`the utterance ${JSON.stringify(text)} synthesized to silence`);
    const packets: Buffer[] = [];
    for (let i = 0; i < pcm.length; i += FRAME_SAMPLES_16K)
      packets.push(Buffer.from(codec.encode(pcm.subarray(i, i + FRAME_SAMPLES_16K))));
    return {
      speech: packets.slice(0, speechPackets),
      tail: packets.slice(speechPackets, speechPackets + tailPackets),
      silenceLoop: packets.slice(speechPackets + tailPackets),
      speechMs: Math.round(speech.length / 16),
      voiceEndMs: voiceEnd / 16,
    };
  } finally {
    codec.close();
  }
}

export interface DeviceIdentity {
  index: number;
  /** MAC address, lowercase with colons. */
  deviceId: string;
  /** UUID v4. */
  clientId: string;
}

export interface ConnectOptions {
  wsUrl: string;
  otaUrl: string;
  /** POST OTA first (as the firmware does at boot) and use its websocket url/token/version. */
  ota: boolean;
  /** Token when OTA is skipped or hands out none. */
  token?: string;
  timeoutMs: number;
  /** How long 503 refusals are retried (after their Retry-After) before the device gives up. */
  retryForMs: number;
  signal: AbortSignal;
  /** Called once per device when the OTA answer pointed elsewhere and `wsUrl` was used instead. */
  warn: (msg: string) => void;
  /**
   * MQTT only: false connects to the broker without opening an audio session (the firmware's idle
   * state). A WebSocket device always says hello.
   */
  openSession?: boolean;
}

export interface TurnOptions {
  audio: UtteranceAudio;
  /** Longest wait for `stt` after the end of speech (silence is sent meanwhile). */
  sttTimeoutMs: number;
  /** Longest wait from `stt` to `tts stop`. */
  answerTimeoutMs: number;
  /** Send `abort` once this many frames of the answer have arrived (then `listen start` follows). */
  bargeInAfterFrames: number | null;
  signal: AbortSignal;
}

export interface TurnRecord {
  device: number;
  deviceId: string;
  turn: number;
  /** `tts stop` arrived after at least one audio frame. */
  done: boolean;
  error?: string;
  bargeIn: boolean;
  /** abort sent → `tts stop` received, ms (barge-in turns). */
  abortToStopMs?: number;
  /** Last speech packet sent → `stt` received, ms. */
  eosToSttMs?: number;
  /** Last speech packet sent → first downlink audio frame, ms. */
  eosToFirstFrameMs?: number;
  /** performance.now() when the utterance's first packet and its last speech packet were sent. */
  speechStartAt?: number;
  speechEndAt?: number;
  /**
   * performance.now() when the user's voice ended: the last voiced sample, as if each packet left
   * the moment its last sample was captured (packet k, sent at t0 + k·60 ms, holds the audio of
   * the 60 ms before), so sample j was spoken at t0 + j/16 − 60 ms.
   */
  voiceEndAt?: number;
  /** performance.now() of the first answer frame. */
  firstFrameAt?: number;
  /** End of the user's voice → first answer frame, ms: what the user waits (sim/voice-to-voice.ts). */
  voiceToVoiceMs?: number;
  /** First frame → `tts stop`, ms. */
  answerMs?: number;
  silencePackets: number;
  sentences: number;
  /** Frames outside tts start/stop (the firmware drops them). */
  strayFrames: number;
  playback: PlaybackStats;
}

interface LiveTurn {
  sttAt?: number;
  ttsStartAt?: number;
  ttsStopAt?: number;
  sentences: number;
  frames: number[];
  stray: number;
}

const sleepUntil = (t: number): Promise<void> => sleep(t - performance.now());

/** The server refused the upgrade with 503 (capacity or load); retry after `retryAfterMs`. */
class Refused extends Error {
  readonly status: number;
  readonly retryAfterMs: number;
  constructor(status: number, retryAfterMs: number) {
    super(`HTTP ${status}`);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * One device of the fleet whatever its transport: the spoken turn (what the firmware does in auto
 * mode and what the report measures). A transport subclass connects, sends, and feeds what it
 * receives through `noteJson` / `noteFrame` / `noteLost`.
 */
export abstract class FleetMember {
  readonly id: DeviceIdentity;
  /** Refusals met while connecting (each was retried or ended the attempt). */
  refusals = 0;
  #live: LiveTurn | null = null;
  #waiters: Array<() => void> = [];
  #lost = false;

  constructor(id: DeviceIdentity) {
    this.id = id;
  }

  /** The connection is up and a session is open (hello answered). */
  abstract get connected(): boolean;
  abstract connect(opts: ConnectOptions): Promise<void>;
  /** Closes the connection; resolves once it is closed (or soon after). */
  abstract close(): Promise<void>;
  protected abstract sendListenStart(): void;
  protected abstract sendOpus(packet: Buffer): void;
  protected abstract sendAbort(): void;

  protected wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  /** A connection (re)starts: nothing lost yet. */
  protected noteOpened(): void {
    this.#lost = false;
  }

  /** The connection is gone: waits end. */
  protected noteLost(): void {
    this.#lost = true;
    this.wake();
  }

  protected get lost(): boolean {
    return this.#lost;
  }

  protected noteFrame(at: number): void {
    const live = this.#live;
    if (live) {
      if (live.ttsStartAt !== undefined && live.ttsStopAt === undefined) live.frames.push(at);
      else live.stray++;
    }
    this.wake();
  }

  protected noteJson(m: Record<string, unknown>, at: number): void {
    const live = this.#live;
    if (live) {
      if (m.type === 'stt') live.sttAt ??= at;
      else if (m.type === 'tts' && m.state === 'start') live.ttsStartAt ??= at;
      else if (m.type === 'tts' && m.state === 'sentence_start') live.sentences++;
      else if (m.type === 'tts' && m.state === 'stop' && live.ttsStartAt !== undefined) live.ttsStopAt ??= at;
    }
    this.wake();
  }

  /** Waits until `pred` holds; false on timeout, abort or a lost connection. */
  protected async until(pred: () => boolean, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (pred()) return true;
      const left = deadline - performance.now();
      if (left <= 0 || signal.aborted || this.#lost) return false;
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(left, 500));
        const onAbort = (): void => done();
        signal.addEventListener('abort', onAbort, { once: true });
        this.#waiters.push(done);
        function done(): void {
          clearTimeout(t);
          signal.removeEventListener('abort', onAbort);
          resolve();
        }
      });
    }
  }

  /** One spoken turn in auto mode. Never throws: failures are recorded in the result. */
  async turn(index: number, opts: TurnOptions): Promise<TurnRecord> {
    const live: LiveTurn = { sentences: 0, frames: [], stray: 0 };
    const rec: TurnRecord = {
      device: this.id.index,
      deviceId: this.id.deviceId,
      turn: index,
      done: false,
      bargeIn: false,
      silencePackets: 0,
      sentences: 0,
      strayFrames: 0,
      playback: playbackStats([]),
    };
    const finish = (error?: string): TurnRecord => {
      this.#live = null;
      if (error) rec.error = error;
      rec.sentences = live.sentences;
      rec.strayFrames = live.stray;
      rec.playback = playbackStats(live.frames, FRAME_MS);
      rec.done = live.ttsStopAt !== undefined && live.frames.length > 0;
      if (live.frames.length > 0 && live.ttsStopAt !== undefined)
        rec.answerMs = live.ttsStopAt - (live.frames[0] as number);
      return rec;
    };
    if (!this.connected) return finish('not connected');
    this.#live = live;
    this.sendListenStart();

    // Speech on a drift-free 60 ms schedule: packet k is due at t0 + k·60 ms.
    const { speech, tail, silenceLoop } = opts.audio;
    const t0 = performance.now();
    let k = 0;
    for (const p of speech) {
      await sleepUntil(t0 + k * FRAME_MS);
      if (!this.connected) return finish('connection closed while speaking');
      if (opts.signal.aborted) return finish('run stopped');
      this.sendOpus(p);
      k++;
    }
    const eosAt = performance.now();
    rec.speechStartAt = t0;
    rec.speechEndAt = eosAt;
    rec.voiceEndAt = t0 + opts.audio.voiceEndMs - FRAME_MS;
    // Encoded silence until the server has heard the end of speech (its `stt`), or the timeout.
    const heard = (): boolean => live.sttAt !== undefined || live.ttsStartAt !== undefined;
    const sttDeadline = eosAt + opts.sttTimeoutMs;
    while (!heard()) {
      const due = t0 + k * FRAME_MS;
      if (due > sttDeadline) break;
      await sleepUntil(due);
      if (heard()) break;
      if (!this.connected) return finish('connection closed while waiting for stt');
      if (opts.signal.aborted) return finish('run stopped');
      const s =
        rec.silencePackets < tail.length
          ? tail[rec.silencePackets]
          : silenceLoop[(rec.silencePackets - tail.length) % silenceLoop.length];
      this.sendOpus(s as Buffer);
      rec.silencePackets++;
      k++;
    }
    if (!heard()) return finish(`no stt within ${opts.sttTimeoutMs} ms of the end of speech`);
    if (live.sttAt !== undefined) rec.eosToSttMs = live.sttAt - eosAt;

    const stopped = (): boolean => live.ttsStopAt !== undefined;
    if (opts.bargeInAfterFrames !== null) {
      const mid = await this.until(
        () => stopped() || live.frames.length >= (opts.bargeInAfterFrames as number),
        opts.answerTimeoutMs,
        opts.signal,
      );
      if (mid && !stopped()) {
        rec.bargeIn = true;
        const abortAt = performance.now();
        this.sendAbort();
        if (await this.until(stopped, opts.answerTimeoutMs, opts.signal))
          rec.abortToStopMs = (live.ttsStopAt as number) - abortAt;
      }
    }
    const ok = await this.until(stopped, opts.answerTimeoutMs, opts.signal);
    if (live.frames.length > 0) {
      rec.firstFrameAt = live.frames[0] as number;
      rec.eosToFirstFrameMs = rec.firstFrameAt - eosAt;
      rec.voiceToVoiceMs = rec.firstFrameAt - rec.voiceEndAt;
    }
    if (!ok)
      return finish(
        this.#lost
          ? 'connection closed during the answer'
          : opts.signal.aborted
            ? 'run stopped'
            : `no tts stop within ${opts.answerTimeoutMs} ms`,
      );
    if (live.frames.length === 0) return finish('tts stop without audio');
    return finish();
  }

  /** Ends the turn bookkeeping; subclasses close their connection after it. */
  protected endTurns(): void {
    this.#live = null;
    this.wake();
  }
}

/** A device on the WebSocket transport. */
export class FleetDevice extends FleetMember {
  dev: DeviceSim | null = null;

  get connected(): boolean {
    return !!this.dev && !this.lost && this.dev.ws.readyState === 1;
  }

  /** OTA (optional), WebSocket, hello; resolves once the server hello arrived. */
  async connect(opts: ConnectOptions): Promise<void> {
    let wsUrl = opts.wsUrl;
    let token = opts.token;
    let version: ProtocolVersion = 1;
    if (opts.ota) {
      const res = await fetch(opts.otaUrl, {
        method: 'POST',
        headers: otaHeaders(this.id, FIRMWARE_2_4_2),
        body: JSON.stringify(systemInfoJson(this.id, FIRMWARE_2_4_2)),
        signal: AbortSignal.any([opts.signal, AbortSignal.timeout(opts.timeoutMs)]),
      });
      if (res.status !== 200) throw new Error(`OTA answered HTTP ${res.status}`);
      const answer = (await res.json()) as { websocket?: { url?: unknown; token?: unknown; version?: unknown } };
      const ws = answer.websocket;
      if (!ws || typeof ws.url !== 'string') throw new Error('OTA answer has no websocket.url');
      // Only the server we were pointed at is ever contacted, whatever the OTA answer says.
      if (new URL(ws.url).host === new URL(opts.wsUrl).host) wsUrl = ws.url;
      else opts.warn(`OTA handed out ${ws.url}; using ${opts.wsUrl} instead`);
      if (typeof ws.token === 'string' && ws.token) token = ws.token;
      if (ws.version === 2 || ws.version === 3) version = ws.version;
    }
    // The WebSocket; a 503 (capacity or load refusal) is retried after its Retry-After, as long
    // as the device's overall connect budget allows.
    const retryUntil = performance.now() + opts.retryForMs;
    for (;;) {
      try {
        await this.#open(wsUrl, token, version, opts.timeoutMs, opts.signal);
        return;
      } catch (err) {
        if (!(err instanceof Refused)) throw err;
        this.refusals++;
        const wait = err.retryAfterMs * (1 + Math.random() * 0.25);
        if (opts.signal.aborted || performance.now() + wait > retryUntil)
          throw new Error(`refused with HTTP ${err.status} (${this.refusals} tries)`);
        await sleep(wait);
      }
    }
  }

  /** One WebSocket attempt: upgrade, hello, server hello. */
  async #open(
    wsUrl: string,
    token: string | undefined,
    version: ProtocolVersion,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    this.noteOpened();
    const dev = new DeviceSim({
      url: wsUrl,
      deviceId: this.id.deviceId,
      clientId: this.id.clientId,
      // The firmware prefixes "Bearer " unless the stored token already has a space in it.
      ...(token && !token.includes(' ') ? { token } : {}),
      ...(token && token.includes(' ') ? { extraHeaders: { Authorization: token } } : {}),
      protocolVersion: version,
      mcpTools: STOCK_TOOLS,
      mcpPageSize: 8,
    });
    this.dev = dev;
    let refused: Refused | null = null;
    dev.ws.on('unexpected-response', (req, res) => {
      const ra = Number(res.headers['retry-after']);
      if (res.statusCode === 503)
        refused = new Refused(res.statusCode, Number.isFinite(ra) && ra > 0 ? ra * 1000 : 5000);
      res.resume();
      req.destroy();
    });
    dev.ws.on('message', (_data: unknown, isBinary: boolean) => {
      if (this.dev === dev) this.#onMessage(isBinary);
    });
    dev.ws.on('close', () => {
      if (this.dev === dev) this.noteLost();
    });
    dev.ws.on('error', () => {});
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        dev.opened,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error('WebSocket connect timed out')),
            Math.max(1, deadline - performance.now()),
          );
        }),
      ]);
    } catch (err) {
      dev.drop();
      throw refused ?? err;
    } finally {
      clearTimeout(timer);
    }
    dev.sendJson({
      type: 'hello',
      version,
      features: { mcp: true },
      transport: 'websocket',
      audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: FRAME_MS },
    });
    const ok = await this.until(() => dev.sessionId !== '', Math.max(1, deadline - performance.now()), signal);
    if (!ok) {
      const closed = this.lost;
      dev.drop();
      throw new Error(
        closed ? `connection closed before the server hello (code ${dev.closeCode})` : 'no server hello in time',
      );
    }
  }

  #onMessage(isBinary: boolean): void {
    const dev = this.dev;
    if (!dev) return;
    if (isBinary) {
      this.noteFrame(dev.audio.at(-1)?.at ?? performance.now());
      // The simulator keeps only timestamps: drop the payloads DeviceSim recorded.
      dev.audio.length = 0;
      dev.timeline.length = 0;
    } else {
      const last = dev.json.at(-1);
      if (last) this.noteJson(last.msg, last.at);
      if (dev.json.length > 200) dev.json.splice(0, dev.json.length - 20);
      if (dev.timeline.length > 200) dev.timeline.length = 0;
    }
  }

  protected sendListenStart(): void {
    this.dev?.listen('start', { mode: 'auto' });
  }

  protected sendOpus(packet: Buffer): void {
    this.dev?.sendOpus(packet);
  }

  protected sendAbort(): void {
    this.dev?.abort();
  }

  async close(): Promise<void> {
    this.endTurns();
    const dev = this.dev;
    if (!dev) return;
    dev.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([dev.closed, new Promise((r) => (timer = setTimeout(r, 5000)))]);
    clearTimeout(timer);
  }
}

/** A locally administered MAC for device `index` of step `step` in run `run` (0..255). */
export function simMac(run: number, step: number, index: number): string {
  const h = (n: number): string => (n & 255).toString(16).padStart(2, '0');
  return ['02', h(run), h(step), h(index >> 16), h(index >> 8), h(index)].join(':');
}
