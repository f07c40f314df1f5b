/**
 * @module WebRTC VAD (libfvad as WASM): no model file, about 3 µs per 30 ms frame. Decisions are
 * binary, so the stream's `threshold` only matters through the 0/1 it is compared with; the
 * aggressiveness `webrtcMode` (default 3) is the real knob. One WASM instance per process; each
 * stream owns an fvad handle and a frame buffer inside it.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { FramedVadStream, type FrameScorer } from './framed-stream.ts';
import type { VadModel, VadModelOptions, VadStream, VadStreamOptions } from './vad.ts';
import type { FvadModule } from '@echogarden/fvad-wasm';

/** 30 ms at 16 kHz: the longest frame libfvad accepts, so the fewest calls. */
const FRAME = 480;

export async function createWebrtcModel(opts: VadModelOptions): Promise<VadModel> {
  let mod: FvadModule;
  try {
    const factory = (await import('@echogarden/fvad-wasm')).default;
    mod = await factory();
  } catch (err) {
    throw new VoiceError(ErrorCode.ProviderUnavailable, 'webrtc vad: cannot load @echogarden/fvad-wasm', {
      cause: err,
    });
  }
  const mode = opts.webrtcMode ?? 3;
  opts.log?.info({ mode }, 'webrtc vad loaded');
  let closed = false;
  return {
    provider: 'webrtc',
    frameSamples: FRAME,
    createStream(streamOpts: VadStreamOptions): VadStream {
      if (closed) throw new VoiceError(ErrorCode.Internal, 'webrtc vad: model closed');
      return new FramedVadStream(new FvadScorer(mod, mode), FRAME, streamOpts);
    },
    async close(): Promise<void> {
      closed = true;
    },
  };
}

class FvadScorer implements FrameScorer {
  readonly #mod: FvadModule;
  readonly #mode: number;
  #handle: number;
  #ptr: number;

  constructor(mod: FvadModule, mode: number) {
    this.#mod = mod;
    this.#mode = mode;
    this.#handle = mod._fvad_new();
    if (this.#handle === 0) throw new VoiceError(ErrorCode.Internal, 'webrtc vad: fvad_new failed');
    this.#configure();
    this.#ptr = mod._malloc(FRAME * 2);
  }

  #configure(): void {
    this.#mod._fvad_set_mode(this.#handle, this.#mode);
    this.#mod._fvad_set_sample_rate(this.#handle, 16000);
  }

  probability(frame: Int16Array): number {
    if (this.#handle === 0) return 0;
    // HEAP16 is re-read on every call: the view is replaced if the WASM memory grows.
    this.#mod.HEAP16.set(frame, this.#ptr >> 1);
    const r = this.#mod._fvad_process(this.#handle, this.#ptr, FRAME);
    return r === 1 ? 1 : 0;
  }

  reset(): void {
    if (this.#handle === 0) return;
    this.#mod._fvad_reset(this.#handle); // resets the mode and rate too
    this.#configure();
  }

  close(): void {
    if (this.#handle === 0) return;
    this.#mod._fvad_free(this.#handle);
    this.#mod._free(this.#ptr);
    this.#handle = 0;
    this.#ptr = 0;
  }
}
