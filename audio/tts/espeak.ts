/**
 * @module espeak-ng TTS: the embedded default, on the WebAssembly build (`espeak-wasm.ts`), so no
 * process is spawned per sentence. In a running server the media workers synthesise for the
 * sessions (`SessionMedia.speak`, straight to Opus); this provider is the same engine behind the
 * generic `Tts` interface, synthesising in the calling thread (tools, tests, `workers: 0`).
 * Output is mono s16 PCM at the engine's 22,050 Hz.
 */
import { throwIfAborted } from '../../core/abort.ts';
import type { Logger } from '../../core/logger.ts';
import { checkEspeakVoice, espeakText, loadEspeakEngine, type EspeakVoice } from './espeak-wasm.ts';
import type { EspeakTtsOptions, Tts, TtsOutputFormat } from './tts.ts';

/** The engine's fixed output rate. */
const ESPEAK_RATE = 22050;

export class EspeakTts implements Tts {
  readonly name = 'espeak';
  readonly outputFormat: TtsOutputFormat = { container: 'pcm', sampleRate: ESPEAK_RATE };
  readonly voice: EspeakVoice;

  constructor(opts: EspeakTtsOptions, _log: Logger) {
    this.voice = { voice: opts.voice ?? 'en-us', ...(opts.speed !== undefined ? { speed: opts.speed } : {}), ...(opts.pitch !== undefined ? { pitch: opts.pitch } : {}) };
  }

  /**
   * Creates the provider after checking the voice: espeak-ng silently falls back to its default
   * voice for an unknown name, so a typo in `tts.voice` would be heard, not reported.
   */
  static async create(opts: EspeakTtsOptions, log: Logger): Promise<EspeakTts> {
    const tts = new EspeakTts(opts, log);
    checkEspeakVoice(await loadEspeakEngine(), tts.voice.voice);
    return tts;
  }

  async *synthesize(text: string, opts: { signal: AbortSignal }): AsyncGenerator<Buffer> {
    throwIfAborted(opts.signal);
    const t = espeakText(text);
    if (!t) return;
    const engine = await loadEspeakEngine();
    const chunks: Buffer[] = [];
    engine.synthesize(t, this.voice, (pcm) => chunks.push(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength)));
    for (const c of chunks) {
      throwIfAborted(opts.signal);
      yield c;
    }
  }

  async close(): Promise<void> {}
}
