/**
 * @module Where the voice is in a PCM buffer, by energy: the simulator trims its synthesized
 * utterance with it and finds the end of the user's voice, from which voice-to-voice counts.
 */

/** 10 ms windows at 16 kHz: the energy measure that finds the voice. */
export const VOICE_WINDOW_SAMPLES = 160;

/**
 * The first and last voiced windows of `pcm`: a window is voiced when its RMS reaches 2 % of the
 * loudest window's (at least 100, about -50 dBFS), which keeps a synthesizer's breath and fade-out
 * apart from its words. Null when nothing reaches it.
 */
export function voicedWindows(
  pcm: Int16Array,
  windowSamples = VOICE_WINDOW_SAMPLES,
): { first: number; last: number; windowSamples: number } | null {
  const rms: number[] = [];
  for (let i = 0; i < pcm.length; i += windowSamples) {
    let acc = 0;
    const end = Math.min(pcm.length, i + windowSamples);
    for (let j = i; j < end; j++) acc += (pcm[j] as number) ** 2;
    rms.push(Math.sqrt(acc / Math.max(1, end - i)));
  }
  const threshold = Math.max(100, 0.02 * Math.max(0, ...rms));
  const first = rms.findIndex((r) => r >= threshold);
  if (first < 0) return null;
  let last = rms.length - 1;
  while (last > first && (rms[last] as number) < threshold) last--;
  return { first, last, windowSamples };
}

/** The sample index just past the last voiced window of `pcm` (its end of voice, to 10 ms); null for silence. */
export function voiceEndSample(pcm: Int16Array, windowSamples = VOICE_WINDOW_SAMPLES): number | null {
  const w = voicedWindows(pcm, windowSamples);
  return w ? Math.min(pcm.length, (w.last + 1) * w.windowSamples) : null;
}
