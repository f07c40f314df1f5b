/**
 * @module TTS bytes → mono PCM at a chosen rate, in the caller's thread:
 * - `wav` and `pcm`: parsed and resampled in-process; no spawn, first
 *   PCM as soon as the first bytes arrive.
 * - `mp3` / `ogg` / `aac` / `flac`: one ffmpeg per utterance (60-90 ms start-up), via
 *   `transcodeToPcm`, told to decode from the first frame (no look-ahead to analyse the stream).
 * A session's speech does not come this way but through `media/tts-to-opus.ts`, which leaves the decoding
 * and resampling of `pcm`, `wav` and Ogg/Opus to its media worker; here is what has no media
 * session (and ffmpeg's part of that path).
 */
import { throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { transcodeToPcm } from '../ffmpeg/transcode.ts';
import { ByteAligner } from '../pcm/pcm.ts';
import { Resampler } from '../pcm/resample.ts';
import { WavStreamParser, downmix } from '../pcm/wav.ts';
import type { StreamingTts, TtsOutputFormat } from './tts.ts';

/** ffmpeg input options: decode from the first frame on, no probing or analysis of what follows. */
const FIRST_FRAME_IS_ENOUGH = ['-probesize', '32', '-analyzeduration', '0'];

export interface TtsPcmOptions {
  /** Target sample rate (the downlink Opus rate). */
  sampleRate: number;
  signal: AbortSignal;
  log?: Logger;
}

/** Converts a TTS byte stream in `format` to mono s16 PCM at `opts.sampleRate`. */
export async function* ttsToPcm(
  bytes: AsyncIterable<Buffer>,
  format: TtsOutputFormat,
  opts: TtsPcmOptions,
): AsyncGenerator<Int16Array> {
  const { signal } = opts;
  throwIfAborted(signal);
  switch (format.container) {
    case 'wav': {
      const parser = new WavStreamParser();
      let resampler: Resampler | undefined;
      for await (const chunk of bytes) {
        throwIfAborted(signal);
        const samples = parser.push(chunk);
        const fmt = parser.format;
        if (samples.length === 0 || !fmt) continue;
        resampler ??= new Resampler(fmt.sampleRate, opts.sampleRate);
        const out = resampler.push(downmix(samples, fmt.channels));
        if (out.length > 0) yield out;
      }
      const tail = resampler?.flush();
      if (tail && tail.length > 0) yield tail;
      return;
    }
    case 'pcm': {
      const aligner = new ByteAligner();
      const resampler = new Resampler(format.sampleRate, opts.sampleRate);
      for await (const chunk of bytes) {
        throwIfAborted(signal);
        const out = resampler.push(aligner.push(chunk));
        if (out.length > 0) yield out;
      }
      const tail = resampler.flush();
      if (tail.length > 0) yield tail;
      return;
    }
    default:
      yield* transcodeToPcm(bytes, {
        sampleRate: opts.sampleRate,
        signal,
        ...(opts.log ? { log: opts.log } : {}),
        // Naming the demuxer saves probing; `ogg` covers OpenAI's `opus` (Ogg Opus) answers.
        inputFormat: format.container === 'aac' ? 'aac' : format.container,
        // The stream's parameters are in its first frame: without these ffmpeg reads on to
        // "analyse" it before decoding anything, ~8 KB of a 48 kb/s mp3, i.e. it waited for 1.3 s
        // of a streamed answer's audio (measured: first PCM 657 → 60 ms after the first byte).
        inputArgs: FIRST_FRAME_IS_ENOUGH,
      });
  }
}

/**
 * Synthesises `text` with `tts` straight to PCM at `opts.sampleRate`, in this thread (see the
 * module's note). Failures as `ttsFailure` says.
 */
export async function* synthesizePcm(tts: StreamingTts, text: string, opts: TtsPcmOptions): AsyncGenerator<Int16Array> {
  try {
    yield* ttsToPcm(tts.synthesize(text, { signal: opts.signal }), tts.outputFormat, opts);
  } catch (err) {
    throw ttsFailure(tts, err);
  }
}

/**
 * What a failure while turning `tts`'s answer into audio is: the TTS service's. Bytes that cannot
 * be decoded (by ffmpeg or a media worker) are its answer, and a stream that broke (ffmpeg
 * reports it as a failed input) keeps the service's own error (timeout, connection lost). So the
 * turn's apology names the voice service, not "something went wrong on my side".
 */
export function ttsFailure(tts: Pick<StreamingTts, 'name' | 'outputFormat'>, err: unknown): unknown {
  if (!(err instanceof VoiceError) || err.code !== ErrorCode.BadInput) return err;
  if (err.cause instanceof VoiceError) return err.cause;
  return new VoiceError(
    ErrorCode.ProviderFailed,
    `${tts.name} tts answered ${tts.outputFormat.container} that cannot be decoded (${err.message})`,
    { cause: err },
  );
}
