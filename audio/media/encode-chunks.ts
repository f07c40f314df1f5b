/**
 * @module The one loop that turns a PCM stream into Opus packets through a per-stream framer,
 * wherever the framer lives (this thread or a media worker): chunk by chunk, pull-based so a
 * paced consumer slows the producer, the last frame padded, and the framer dropped even when the
 * consumer stops early.
 */
import { throwIfAborted } from '../../core/abort.ts';

/** Encodes one chunk of the stream (`null` with `final`: flush and forget the stream). */
export type EncodeChunk = (chunk: Int16Array | null, final: boolean) => Buffer[] | Promise<Buffer[]>;

export async function* encodeChunks(
  pcm: AsyncIterable<Int16Array>,
  signal: AbortSignal,
  encode: EncodeChunk,
): AsyncGenerator<Buffer> {
  throwIfAborted(signal);
  let ended = false;
  try {
    for await (const chunk of pcm) {
      throwIfAborted(signal);
      yield* await encode(chunk, false);
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
