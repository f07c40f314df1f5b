/**
 * @module The streaming helper's wire (`native/pocketsphinx-stream.c` describes it): frames of
 * [u8 kind][u32 id][u32 byte count][bytes], little-endian, both ways. This file encodes what we
 * send and checks what comes back: a frame of an unknown kind, or longer than the helper can
 * write in one piece, means the helper (or the pipe) is broken, and the reader says so instead
 * of guessing where the next frame starts.
 */

export const HEAD_BYTES = 9;
/** The helper writes each frame in one write(2) of at most PIPE_BUF (4096) bytes. */
export const MAX_TEXT_BYTES = 4096 - HEAD_BYTES;
/** Audio per frame we send: 0.5 s at 16 kHz (the helper takes up to 1 MiB). */
export const MAX_AUDIO_SAMPLES = 8000;

export type OutKind = 'O' | 'A' | 'F' | 'C';
/** Ready, partial, result (final), error. */
export type InKind = 'Y' | 'P' | 'R' | 'E';
const IN_KINDS = new Set<string>(['Y', 'P', 'R', 'E']);

export interface InFrame {
  kind: InKind;
  id: number;
  text: string;
}

/** One frame to the helper; audio is copied (it may be a view into a larger buffer). */
export function encodeFrame(kind: OutKind, id: number, pcm?: Int16Array): Buffer {
  const bytes = pcm ? pcm.byteLength : 0;
  const out = Buffer.allocUnsafe(HEAD_BYTES + bytes);
  out[0] = kind.charCodeAt(0);
  out.writeUInt32LE(id, 1);
  out.writeUInt32LE(bytes, 5);
  if (pcm) Buffer.from(pcm.buffer, pcm.byteOffset, bytes).copy(out, HEAD_BYTES);
  return out;
}

/** Incremental reader of the helper's stdout; `push` throws on a malformed frame. */
export class FrameReader {
  #buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): InFrame[] {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const frames: InFrame[] = [];
    while (this.#buf.length >= HEAD_BYTES) {
      const kind = String.fromCharCode(this.#buf[0] as number);
      const len = this.#buf.readUInt32LE(5);
      if (!IN_KINDS.has(kind) || len > MAX_TEXT_BYTES)
        throw new Error(`malformed frame from the helper (kind ${this.#buf[0]}, ${len} bytes)`);
      if (this.#buf.length < HEAD_BYTES + len) break;
      frames.push({
        kind: kind as InKind,
        id: this.#buf.readUInt32LE(1),
        text: this.#buf.toString('utf8', HEAD_BYTES, HEAD_BYTES + len),
      });
      this.#buf = this.#buf.subarray(HEAD_BYTES + len);
    }
    return frames;
  }
}
