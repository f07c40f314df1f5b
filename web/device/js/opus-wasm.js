/**
 * The opusscript WASM build (served by the server at /vendor/opusscript/), for browsers without
 * WebCodecs Opus. Its Emscripten loader fetches the .wasm synchronously, which browsers refuse, so
 * the binary is fetched first and handed over as `wasmBinary`.
 *
 * The handler's calling convention is copied from opusscript's own index.js: PCM bytes travel one
 * byte per HEAPU16 slot at `subarray(ptr).byteOffset`.
 */

const BASE = '/vendor/opusscript/';
const MAX_FRAME_SAMPLES = (48000 * 60) / 1000;
const MAX_PACKET_BYTES = 1276 * 3;
/** OPUS_APPLICATION_AUDIO, as the firmware uses. */
const APPLICATION_AUDIO = 2049;
const OPUS_SET_BITRATE = 4002;

/** @type {Promise<any> | undefined} */
let loading;

/** Loads the WASM module once per page. */
export function loadOpusWasm() {
  loading ??= (async () => {
    const [binary] = await Promise.all([
      fetch(`${BASE}opusscript_native_wasm.wasm`).then((r) => {
        if (!r.ok) throw new Error(`opus wasm: HTTP ${r.status}`);
        return r.arrayBuffer();
      }),
      new Promise((resolve, reject) => {
        if (/** @type {any} */ (window).Module) return resolve(undefined);
        const s = document.createElement('script');
        s.src = `${BASE}opusscript_native_wasm.js`;
        s.onload = () => resolve(undefined);
        s.onerror = () => reject(new Error('opus wasm script failed to load'));
        document.head.append(s);
      }),
    ]);
    const mod = /** @type {any} */ (window).Module({ wasmBinary: binary });
    await mod.ready;
    return mod;
  })();
  return loading;
}

/**
 * One Opus encoder or decoder instance on the WASM module.
 */
export class WasmOpus {
  /**
   * @param {any} mod the loaded module
   * @param {number} sampleRate 8000, 12000, 16000, 24000 or 48000
   */
  constructor(mod, sampleRate) {
    this.mod = mod;
    this.sampleRate = sampleRate;
    this.handler = new mod.OpusScriptHandler(sampleRate, 1, APPLICATION_AUDIO);
    this.inPcm = mod._malloc(MAX_FRAME_SAMPLES * 2);
    this.inOpus = mod._malloc(MAX_PACKET_BYTES);
    this.outOpus = mod._malloc(MAX_PACKET_BYTES);
    this.outPcm = mod._malloc(MAX_FRAME_SAMPLES * 2);
  }

  /** @param {number} bps */
  setBitrate(bps) {
    this.handler._encoder_ctl(OPUS_SET_BITRATE, bps);
  }

  /**
   * @param {Int16Array} pcm one frame
   * @returns {Uint8Array} the packet
   */
  encode(pcm) {
    const bytes = new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    const view = this.mod.HEAPU16.subarray(this.inPcm, this.inPcm + MAX_FRAME_SAMPLES * 2);
    view.set(bytes);
    const len = this.handler._encode(view.byteOffset, bytes.length, this.outOpus, pcm.length);
    if (len < 0) throw new Error(`opus encode error ${len}`);
    return this.mod.HEAPU8.slice(this.outOpus, this.outOpus + len);
  }

  /**
   * @param {Uint8Array} packet
   * @returns {Int16Array} decoded samples at `sampleRate`
   */
  decode(packet) {
    if (packet.length > MAX_PACKET_BYTES) throw new Error('opus packet too large');
    this.mod.HEAPU8.set(packet, this.inOpus);
    const out = this.mod.HEAPU16.subarray(this.outPcm, this.outPcm + MAX_FRAME_SAMPLES * 2);
    const samples = this.handler._decode(this.inOpus, packet.length, out.byteOffset);
    if (samples < 0) throw new Error(`opus decode error ${samples}`);
    const bytes = Uint8Array.from(out.subarray(0, samples * 2));
    return new Int16Array(bytes.buffer);
  }

  close() {
    if (!this.handler) return;
    this.mod.OpusScriptHandler.destroy_handler(this.handler);
    for (const p of [this.inPcm, this.inOpus, this.outOpus, this.outPcm]) this.mod._free(p);
    this.handler = null;
  }
}
