/**
 * @module The audio of a `notify`: the text spoken in the device's agent's voice, as one mono
 * Ogg/Opus file. The same synthesis as a turn's: the embedded voice speaks in a media worker,
 * another TTS streams its bytes to a worker that decodes and encodes them; the Opus packets are
 * then put in Ogg pages here.
 */
import type { Logger } from '../../core/logger.ts';
import type { MediaEngine } from '../../audio/media/media.ts';
import type { OpusSampleRate } from '../../audio/opus/codec.ts';
import { synthesizeOpus } from '../../audio/media/tts-to-opus.ts';
import { createSentenceCutter } from '../../llm/sentences.ts';
import type { HeldProfile } from '../../voice/conversation/turn-profile.ts';
import { oggOpus } from './ogg-opus.ts';

export interface NotifyAudioOptions {
  media: MediaEngine;
  /** The device's assistant now (its voice). */
  profileFor(deviceId: string): HeldProfile;
  sampleRate: OpusSampleRate;
  complexity: number;
  vad: { threshold: number; minSilenceMs: number; minSpeechMs: number; pauseMs: number };
  log: Logger;
}

/** Longest synthesis of one clip; past it the clip fails (and the device gets the text as an alert). */
const SYNTH_TIMEOUT_MS = 30_000;

/** `text` in `deviceId`'s agent's voice as an Ogg/Opus file. */
export async function notifyAudio(o: NotifyAudioOptions, deviceId: string, text: string): Promise<Buffer> {
  const media = await o.media.open({ vad: o.vad, downlinkSampleRate: o.sampleRate, complexity: o.complexity }, o.log);
  const signal = AbortSignal.timeout(SYNTH_TIMEOUT_MS);
  // Held only once the media state is there: a failed open leaves no profile held.
  let held: HeldProfile | undefined;
  try {
    held = o.profileFor(deviceId);
    const tts = held.profile.tts;
    // Cut like a turn's text: the synthesis works a sentence at a time.
    const cutter = createSentenceCutter({ maxChars: 160, firstCutMinChars: Number.MAX_SAFE_INTEGER });
    const packets: Buffer[] = [];
    for (const piece of [...cutter.push(text), ...cutter.flush()]) {
      const stream =
        tts.synthesis === 'media-worker'
          ? media.speak(piece, signal, true, tts.voice)
          : synthesizeOpus(tts, piece, media, { sampleRate: o.sampleRate, signal, log: o.log });
      for await (const p of stream) packets.push(p);
    }
    return oggOpus(packets, { inputSampleRate: o.sampleRate });
  } finally {
    media.close();
    held?.release();
  }
}
