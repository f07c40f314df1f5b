/**
 * Opus in the browser: WebCodecs `AudioEncoder`/`AudioDecoder` where the browser has them (Chrome,
 * Edge, Safari 17+), else the opusscript WASM build. Both give the same shape: push PCM or packets
 * in, receive packets or PCM through a callback, in order.
 */
import { loadOpusWasm, WasmOpus } from './opus-wasm.js';

/** Uplink format the firmware uses. */
export const UPLINK_RATE = 16000;
export const UPLINK_FRAME_SAMPLES = 960;
const UPLINK_BITRATE = 24000;

/** @returns {Promise<boolean>} whether WebCodecs can encode 16 kHz mono 60 ms Opus here */
export async function webCodecsOpusSupported() {
  const w = /** @type {any} */ (globalThis);
  if (!w.AudioEncoder || !w.AudioDecoder) return false;
  try {
    const e = await w.AudioEncoder.isConfigSupported(encoderConfig());
    const d = await w.AudioDecoder.isConfigSupported({ codec: 'opus', sampleRate: 24000, numberOfChannels: 1 });
    return Boolean(e.supported && d.supported);
  } catch {
    return false;
  }
}

function encoderConfig() {
  return {
    codec: 'opus',
    sampleRate: UPLINK_RATE,
    numberOfChannels: 1,
    bitrate: UPLINK_BITRATE,
    // µs: one packet per 60 ms frame, as the server's decoder expects.
    opus: { frameDuration: 60000, complexity: 5 },
  };
}

/**
 * @typedef {{ encode(frame: Float32Array): void, close(): void, kind: string }} OpusEncoderLike
 * @typedef {{ decode(packet: Uint8Array): void, reset(): void, close(): void, kind: string }} OpusDecoderLike
 */

/**
 * @param {'webcodecs'|'wasm'} kind
 * @param {(packet: Uint8Array) => void} onPacket
 * @param {(err: Error) => void} onError
 * @returns {Promise<OpusEncoderLike>}
 */
export async function createOpusEncoder(kind, onPacket, onError) {
  if (kind === 'webcodecs') {
    const w = /** @type {any} */ (globalThis);
    const enc = new w.AudioEncoder({
      output: (/** @type {any} */ chunk) => {
        const buf = new Uint8Array(chunk.byteLength);
        chunk.copyTo(buf);
        onPacket(buf);
      },
      error: (/** @type {any} */ e) => onError(new Error(`opus encoder: ${e?.message ?? e}`)),
    });
    enc.configure(encoderConfig());
    let ts = 0;
    return {
      kind,
      encode(frame) {
        if (enc.state !== 'configured') return;
        const data = new w.AudioData({
          format: 'f32',
          sampleRate: UPLINK_RATE,
          numberOfFrames: frame.length,
          numberOfChannels: 1,
          timestamp: ts,
          data: frame,
        });
        ts += (frame.length / UPLINK_RATE) * 1e6;
        enc.encode(data);
        data.close();
      },
      close() {
        if (enc.state !== 'closed') enc.close();
      },
    };
  }
  const mod = await loadOpusWasm();
  const enc = new WasmOpus(mod, UPLINK_RATE);
  enc.setBitrate(UPLINK_BITRATE);
  return {
    kind,
    encode(frame) {
      const pcm = new Int16Array(frame.length);
      for (let i = 0; i < frame.length; i++)
        pcm[i] = Math.max(-32768, Math.min(32767, Math.round((frame[i] ?? 0) * 32767)));
      try {
        onPacket(enc.encode(pcm));
      } catch (err) {
        onError(/** @type {Error} */ (err));
      }
    },
    close: () => enc.close(),
  };
}

/**
 * @param {'webcodecs'|'wasm'} kind
 * @param {number} sampleRate the rate announced in the server hello
 * @param {(pcm: Float32Array, sampleRate: number) => void} onPcm
 * @param {(err: Error) => void} onError
 * @returns {Promise<OpusDecoderLike>}
 */
export async function createOpusDecoder(kind, sampleRate, onPcm, onError) {
  if (kind === 'webcodecs') {
    const w = /** @type {any} */ (globalThis);
    const config = { codec: 'opus', sampleRate, numberOfChannels: 1 };
    let ts = 0;
    const dec = new w.AudioDecoder({
      output: (/** @type {any} */ data) => {
        const pcm = new Float32Array(data.numberOfFrames);
        data.copyTo(pcm, { planeIndex: 0, format: 'f32-planar' });
        const rate = data.sampleRate;
        data.close();
        onPcm(pcm, rate);
      },
      error: (/** @type {any} */ e) => onError(new Error(`opus decoder: ${e?.message ?? e}`)),
    });
    dec.configure(config);
    return {
      kind,
      decode(packet) {
        if (dec.state !== 'configured') dec.configure(config);
        dec.decode(new w.EncodedAudioChunk({ type: 'key', timestamp: ts, data: packet }));
        ts += 60000;
      },
      reset() {
        // Drops queued packets and pending outputs: nothing decoded before an abort plays after it.
        if (dec.state === 'closed') return;
        dec.reset();
        dec.configure(config);
      },
      close() {
        if (dec.state !== 'closed') dec.close();
      },
    };
  }
  const mod = await loadOpusWasm();
  let dec = new WasmOpus(mod, sampleRate);
  return {
    kind,
    decode(packet) {
      let pcm;
      try {
        pcm = dec.decode(packet);
      } catch (err) {
        onError(/** @type {Error} */ (err));
        return;
      }
      const f = new Float32Array(pcm.length);
      for (let i = 0; i < pcm.length; i++) f[i] = (pcm[i] ?? 0) / 32768;
      onPcm(f, sampleRate);
    },
    reset() {
      dec.close();
      dec = new WasmOpus(mod, sampleRate);
    },
    close: () => dec.close(),
  };
}
