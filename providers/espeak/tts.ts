/**
 * @module espeak-ng, the embedded TTS. It synthesises inside the media workers (`audio/media/`,
 * with the engine of `audio/tts/espeak-native.ts` or `espeak-wasm.ts`), straight to Opus, so this
 * provider only names the voice they load: the workers check it when they start (espeak-ng would
 * fall back to its default voice for an unknown name, so a typo is reported, not heard).
 */
import type { MediaWorkerTts } from '../../audio/tts/tts.ts';
import type { EspeakTtsOptions } from './options.ts';

export function createEspeakTts(opts: EspeakTtsOptions): MediaWorkerTts {
  return {
    name: 'espeak',
    synthesis: 'media-worker',
    voice: { voice: opts.voice, speed: opts.speed, pitch: opts.pitch },
    close: async () => {},
  };
}
