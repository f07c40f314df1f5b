/**
 * @module A remote TTS's answer → downlink Opus packets, with the session's media worker doing
 * the audio work: `pcm` (at any rate), `wav` and Ogg/Opus bytes go to the worker as they arrive,
 * and it resamples or decodes them before encoding (`SessionMedia.encode` with a format), so the
 * main thread never touches a sample of them. `mp3`, `aac` and `flac` go through one ffmpeg per
 * utterance first (`../tts/to-pcm.ts`), which outputs PCM at the downlink rate. First audio leaves as
 * soon as the first bytes decode: nothing waits for the body's end.
 */
import type { DownlinkFormat, SessionMedia } from './media.ts';
import { ttsFailure, ttsToPcm, type TtsPcmOptions } from '../tts/to-pcm.ts';
import type { StreamingTts, TtsOutputFormat } from '../tts/tts.ts';

/** The format a media worker reads itself, or undefined when ffmpeg must decode it first. */
export function workerDecodes(format: TtsOutputFormat): DownlinkFormat | undefined {
  switch (format.container) {
    case 'pcm':
      return { container: 'pcm', sampleRate: format.sampleRate };
    case 'wav':
    case 'ogg':
      return { container: format.container };
    default:
      return undefined;
  }
}

/**
 * A TTS byte stream in `format` → Opus packets at `opts.sampleRate` (the session's downlink
 * rate). Bytes that cannot be decoded fail it with `bad_input`; `ttsFailure` names the service.
 */
export function ttsBytesToOpus(
  media: SessionMedia,
  bytes: AsyncIterable<Buffer>,
  format: TtsOutputFormat,
  opts: TtsPcmOptions,
): AsyncIterable<Buffer> {
  const direct = workerDecodes(format);
  if (direct) return media.encode(bytes, opts.signal, direct);
  return media.encode(ttsToPcm(bytes, format, opts), opts.signal);
}

/** Synthesises `text` with `tts` to Opus packets for `media`'s session. Failures as `ttsFailure` says. */
export async function* synthesizeOpus(
  tts: StreamingTts,
  text: string,
  media: SessionMedia,
  opts: TtsPcmOptions,
): AsyncGenerator<Buffer> {
  try {
    yield* ttsBytesToOpus(media, tts.synthesize(text, { signal: opts.signal }), tts.outputFormat, opts);
  } catch (err) {
    throw ttsFailure(tts, err);
  }
}
