/**
 * @module PCM stream → Opus packet stream: cuts the PCM into exact codec frames (the last one
 * padded with silence) and encodes each. Pull-based, so a paced consumer slows the producer.
 */
import { throwIfAborted } from '../../core/abort.ts';
import { PcmFramer } from '../pcm.ts';
import type { OpusCodec } from './codec.ts';

/**
 * Encodes `pcm` (at the codec's sample rate) into one packet per frame. Stops at once with an
 * Aborted error when `signal` aborts; returning early also returns the source iterator.
 */
export async function* encodeOpusStream(pcm: AsyncIterable<Int16Array>, codec: OpusCodec, signal: AbortSignal): AsyncGenerator<Buffer> {
  throwIfAborted(signal);
  const framer = new PcmFramer(codec.frameSamples);
  for await (const chunk of pcm) {
    throwIfAborted(signal);
    for (const frame of framer.push(chunk)) {
      yield codec.encode(frame);
      throwIfAborted(signal);
    }
  }
  const last = framer.flush();
  if (last) yield codec.encode(last);
}

/** Decodes a packet stream, skipping corrupt packets (counted by the codec). */
export async function* decodeOpusStream(packets: AsyncIterable<Uint8Array>, codec: OpusCodec, signal: AbortSignal): AsyncGenerator<Int16Array> {
  throwIfAborted(signal);
  for await (const p of packets) {
    throwIfAborted(signal);
    const pcm = codec.decode(p);
    if (pcm) yield pcm;
  }
}
