/**
 * @module espeak-ng compiled to WebAssembly (`@echogarden/espeak-ng-emscripten`, voice data
 * embedded): the embedded TTS, synthesised inside the calling thread. Spawning the Debian
 * `espeak-ng` binary once per sentence forked the whole server process each time (the largest
 * self-time item of a 50-device profile); the WASM engine is loaded once per thread and reused.
 *
 * Synthesis is synchronous (about 6 ms of CPU per second of speech once warm), so it belongs in
 * a media worker thread; in the main thread only when media workers are switched off.
 * Licence: the package is GPL-3.0, like the espeak-ng program the image already ships.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';

/** Voice settings of the embedded TTS (the config's `tts` block when `provider: espeak`). */
export interface EspeakVoice {
  /** espeak-ng voice: `en-us`, `cmn-latn-pinyin` for Mandarin, variants like `en-us+f3`. */
  voice: string;
  /** Words per minute (espeak default 175). */
  speed?: number;
  /** Pitch 0..99 (espeak default 50). */
  pitch?: number;
}

interface WasmVoiceInfo {
  name: string;
  identifier: string;
  languages: Array<{ name: string }>;
}

interface WasmWorker {
  readonly samplerate: number;
  rate: number;
  pitch: number;
  set_voice(name: string): unknown;
  list_voices(): WasmVoiceInfo[];
  synthesize(text: string, cb: (samples: Int16Array | null, events: unknown) => void): void;
}

interface WasmModule {
  eSpeakNGWorker: new () => WasmWorker;
}

/** One loaded engine (per thread). */
export interface EspeakEngine {
  /** Output rate of every synthesis (22,050 Hz). */
  readonly sampleRate: number;
  /** Lower-case names a voice may be given by: language codes, identifiers, file names. */
  knownVoices(): Set<string>;
  /**
   * Synthesises `text`, handing PCM chunks to `onChunk` as they are produced: at `sampleRate`, or
   * at `outRate` when the engine resamples by itself (`resamples`).
   */
  synthesize(text: string, voice: EspeakVoice, onChunk: (pcm: Int16Array) => void, outRate?: number): void;
  /** The engine delivers any `outRate` itself (native helper); otherwise the caller resamples. */
  readonly resamples?: boolean;
}

let loading: Promise<EspeakEngine> | undefined;

/** Loads the engine once per thread (about 200 ms, plus the first syntheses while the JIT warms). */
export function loadEspeakEngine(): Promise<EspeakEngine> {
  loading ??= load();
  return loading;
}

async function load(): Promise<EspeakEngine> {
  let mod: WasmModule;
  try {
    const { default: create } = await import('@echogarden/espeak-ng-emscripten');
    mod = (await create()) as WasmModule;
  } catch (err) {
    loading = undefined;
    throw new VoiceError(
      ErrorCode.ProviderUnavailable,
      `espeak-ng (WASM) cannot load: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  const worker = new mod.eSpeakNGWorker();
  let current = '';
  let known: Set<string> | undefined;
  return {
    sampleRate: worker.samplerate,
    knownVoices() {
      if (!known) {
        known = new Set();
        for (const v of worker.list_voices()) {
          known.add(v.identifier.toLowerCase());
          known.add((v.identifier.split('/').pop() ?? '').toLowerCase());
          for (const l of v.languages) known.add(l.name.toLowerCase());
        }
      }
      return known;
    },
    synthesize(text, voice, onChunk) {
      if (voice.voice !== current) {
        worker.set_voice(voice.voice);
        current = voice.voice;
      }
      worker.rate = voice.speed !== undefined ? Math.round(voice.speed) : 175;
      worker.pitch = voice.pitch !== undefined ? Math.round(voice.pitch) : 50;
      worker.synthesize(text, (samples) => {
        // The engine reuses its buffer between callbacks: copy.
        if (samples && samples.length > 0) onChunk(samples.slice());
      });
    },
  };
}

/**
 * Throws a ConfigInvalid error when espeak-ng does not know the voice: it would silently fall
 * back to its default voice, so a typo in `tts.voice` would be heard, not reported.
 */
export function checkEspeakVoice(engine: EspeakEngine, voice: string): void {
  const base = (voice.split('+')[0] ?? voice).toLowerCase();
  if (!engine.knownVoices().has(base)) {
    throw new VoiceError(
      ErrorCode.ConfigInvalid,
      `espeak-ng voice '${voice}' does not exist (see \`espeak-ng --voices\`)`,
    );
  }
}

/** Collapses whitespace; empty text synthesises nothing. */
export function espeakText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
