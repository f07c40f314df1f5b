/**
 * @module The FunASR runtime's messages: the config that opens an utterance, the end marker, and
 * the schema every message from the server is checked against (only the fields we read; servers
 * add others, such as `timestamp`, `stamp_sents`, `spk_name`, `slice_type`, which are ignored).
 */
import { z } from 'zod';
import type { FunasrAsrOptions } from './options.ts';

/** The rate the runtime's models take; other uplink rates are resampled to it. */
export const FUNASR_SAMPLE_RATE = 16_000;

/**
 * One message from the server. `mode` is `online`, `2pass-online`, `2pass-offline` or `offline` on
 * results; the C++ server leaves it out of an end-of-input result without text, and the Python
 * server's acknowledgement of `is_end` carries the connection's mode (`2pass`). `error` comes with
 * `is_final:false` on that acknowledgement.
 */
export const FunasrMessageSchema = z.object({
  mode: z.string().max(32).optional(),
  text: z.string().optional(),
  wav_name: z.string().optional(),
  is_final: z.boolean().optional(),
  is_end: z.boolean().optional(),
  error: z.string().optional(),
});
export type FunasrMessage = z.infer<typeof FunasrMessageSchema>;

/** Samples per binary frame: FunASR's client sends `60 × chunk_size[1] / chunk_interval` ms at a time. */
export function frameSamples(opts: Pick<FunasrAsrOptions, 'chunkSize' | 'chunkInterval'>): number {
  const ms = (60 * opts.chunkSize[1]) / opts.chunkInterval;
  return Math.max(1, Math.round((ms * FUNASR_SAMPLE_RATE) / 1000));
}

/** The first message of an utterance: mode and parameters (the keys FunASR's own client sends). */
export function configMessage(opts: FunasrAsrOptions, wavName: string): string {
  return JSON.stringify({
    mode: opts.mode,
    // Sent in every mode: the Python server drops audio until it knows `chunk_size`, and the C++
    // one sets up its decoder from it.
    chunk_size: opts.chunkSize,
    chunk_interval: opts.chunkInterval,
    encoder_chunk_look_back: opts.encoderChunkLookBack,
    decoder_chunk_look_back: opts.decoderChunkLookBack,
    audio_fs: FUNASR_SAMPLE_RATE,
    wav_name: wavName,
    wav_format: 'pcm',
    is_speaking: true,
    ...(opts.hotwords && Object.keys(opts.hotwords).length > 0 ? { hotwords: JSON.stringify(opts.hotwords) } : {}),
    itn: opts.itn,
  });
}

/**
 * The end of the utterance. `is_end` asks a current Python server for an acknowledgement once
 * everything is decoded (others ignore it). The new `wav_name` tells the end's results from
 * results of earlier audio still on the way: every FunASR server stamps a result with the name
 * current when it made it, and a sentence the Python server closed mid-stream also says
 * `is_final:true`.
 */
export function endMessage(endWavName: string): string {
  return JSON.stringify({ is_speaking: false, is_end: true, wav_name: endWavName });
}
