/**
 * @module The one loop that turns a downlink stream into Opus packets through a per-stream
 * framer, wherever the framer lives (this thread or a media worker): chunk by chunk, pull-based
 * so a paced consumer slows the producer, the last frame padded, and the stream dropped even when
 * the consumer stops early. A large chunk is sent in pieces, so that one request never holds a
 * worker (which serves other sessions between requests) for long.
 */
import { throwIfAborted } from '../../core/abort.ts';
import type { DownlinkFormat } from './media.ts';

/** Encodes one chunk of the stream's bytes (`null` with `final`: flush and forget the stream). */
export type EncodeChunk = (chunk: Uint8Array | null, final: boolean) => Buffer[] | Promise<Buffer[]>;

/**
 * Most bytes per request: about 0.7 s of 24 kHz PCM (a dozen frames to encode); of Ogg/Opus,
 * whose bytes hold ten times more audio, about a second (decoded and encoded in ~5 ms).
 */
const MAX_PCM_BYTES = 32 * 1024;
const MAX_OGG_BYTES = 4 * 1024;

export async function* encodeChunks(
  audio: AsyncIterable<Int16Array | Uint8Array>,
  signal: AbortSignal,
  format: DownlinkFormat | undefined,
  encode: EncodeChunk,
): AsyncGenerator<Buffer> {
  throwIfAborted(signal);
  const max = format?.container === 'ogg' ? MAX_OGG_BYTES : MAX_PCM_BYTES;
  let ended = false;
  try {
    for await (const chunk of audio) {
      throwIfAborted(signal);
      const bytes =
        chunk instanceof Uint8Array ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      // Pieces of PCM keep whole samples (`max` is even), so a chunk the caller aligned stays aligned.
      for (let at = 0; at < bytes.byteLength; at += max) {
        yield* await encode(bytes.subarray(at, Math.min(at + max, bytes.byteLength)), false);
        throwIfAborted(signal);
      }
    }
    ended = true;
    yield* await encode(null, true);
  } finally {
    if (!ended)
      void Promise.resolve()
        .then(() => encode(null, true))
        .catch(() => {});
  }
}
