/**
 * @module Ogg pages → packets (RFC 3533), streaming: bytes go in as they arrive (a chunk may end
 * anywhere, in a page's header or in a packet), whole packets come out. Made for a remote TTS's
 * Ogg/Opus answer, so it is strict where that stream has no reason to differ: every page is
 * checked (capture pattern, version, CRC), one logical stream at a time (a new one may follow the
 * last one's end: servers that chain one file per sentence), a packet continued only where the
 * previous page said so. Anything else throws a `BadInput` VoiceError naming what was wrong.
 *
 * Bounded: it holds at most one page (≤ 65,307 bytes, the format's own limit) and one packet
 * being assembled across pages (`maxPacketBytes`); bytes that trickle in are joined a few times
 * per page, never once per byte.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { oggCrc } from './ogg-crc.ts';

/** Header bytes before the lacing table. */
const HEADER_BYTES = 27;
const FLAG_CONTINUED = 0x01;
const FLAG_BOS = 0x02;
const FLAG_EOS = 0x04;
const ZERO_CRC = new Uint8Array(4);
const CAPTURE = Buffer.from('OggS', 'latin1');
/**
 * An Opus packet is at most 120 ms of 6 × 1,275 bytes; the comment header is the only large
 * packet a TTS stream carries, and a vendor's is a few hundred bytes.
 */
export const DEFAULT_MAX_PACKET_BYTES = 64 * 1024;

export interface OggPacket {
  data: Uint8Array;
  /** The first packet of a logical stream (on its beginning-of-stream page). */
  first: boolean;
}

function bad(message: string): VoiceError {
  return new VoiceError(ErrorCode.BadInput, `ogg: ${message}`);
}

export class OggPacketReader {
  readonly #maxPacketBytes: number;
  /** Bytes of the page being received (less than one whole page between calls), as they came. */
  #chunks: Buffer[] = [];
  #pendingBytes = 0;
  /**
   * Bytes the page being received needs before it is worth looking at again (its capture
   * pattern, its header, its lacing table, all of it): a stream that trickles in a byte at a time
   * is joined a few times per page, not once per byte.
   */
  #need = 1;
  /** Offset of the page being received in the stream, for error messages. */
  #offset = 0;
  /** Pieces of a packet that continues on the next page. */
  #partial: Uint8Array[] = [];
  #partialBytes = 0;
  /** The logical stream being read; undefined before the first page and after an end-of-stream page. */
  #serial: number | undefined;
  #sequence = 0;
  #pages = 0;
  /** A packet of the current stream has been returned, so the next one is not its first. */
  #started = false;

  constructor(opts: { maxPacketBytes?: number } = {}) {
    this.#maxPacketBytes = opts.maxPacketBytes ?? DEFAULT_MAX_PACKET_BYTES;
  }

  /** Pages read so far. */
  get pages(): number {
    return this.#pages;
  }

  /**
   * The packets completed by `bytes`. A packet's data may be a view of `bytes`: use it before
   * the next call.
   */
  push(bytes: Uint8Array): OggPacket[] {
    if (bytes.byteLength === 0) return [];
    const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (this.#pendingBytes + view.length < this.#need) {
      // Kept as a copy: the caller may reuse its chunk.
      this.#chunks.push(Buffer.from(view));
      this.#pendingBytes += view.length;
      return [];
    }
    const buf =
      this.#chunks.length === 0 ? view : Buffer.concat([...this.#chunks, view], this.#pendingBytes + view.length);
    const packets: OggPacket[] = [];
    let at = 0;
    for (;;) {
      const page = this.#measure(buf, at);
      if ('need' in page) {
        this.#need = page.need;
        break;
      }
      this.#page(buf.subarray(at, at + page.size), packets);
      at += page.size;
      this.#offset += page.size;
    }
    // A copy: the caller's chunk may be reused, and a view would pin a large buffer.
    this.#chunks = at < buf.length ? [Buffer.from(buf.subarray(at))] : [];
    this.#pendingBytes = buf.length - at;
    return packets;
  }

  /** The stream is over: a page or a packet cut short is an error. */
  end(): void {
    if (this.#pendingBytes > 0) throw bad(`the stream ended inside a page (${this.#pendingBytes} bytes)`);
    if (this.#partialBytes > 0) throw bad('the stream ended inside a packet');
    if (this.#pages === 0) throw bad('no page at all');
  }

  /** The length of the page starting at `at` once all of it is in `buf`, else how many bytes it needs to be looked at again. */
  #measure(buf: Buffer, at: number): { size: number } | { need: number } {
    const have = buf.length - at;
    if (have < 4) {
      if (have > 0 && !CAPTURE.subarray(0, have).equals(buf.subarray(at))) throw this.#lostSync();
      // At a page's start the next byte is looked at: a stream that is not Ogg fails at once.
      return { need: have === 0 ? 1 : 4 };
    }
    if (!CAPTURE.equals(buf.subarray(at, at + 4))) throw this.#lostSync();
    if (have < HEADER_BYTES) return { need: HEADER_BYTES };
    if (buf[at + 4] !== 0) throw bad(`unknown stream structure version ${buf[at + 4]} at byte ${this.#offset}`);
    const segments = buf[at + 26] as number;
    if (have < HEADER_BYTES + segments) return { need: HEADER_BYTES + segments };
    let body = 0;
    for (let i = 0; i < segments; i++) body += buf[at + HEADER_BYTES + i] as number;
    const size = HEADER_BYTES + segments + body;
    return have < size ? { need: size } : { size };
  }

  #lostSync(): VoiceError {
    return bad(`no page at byte ${this.#offset} (not an Ogg stream, or bytes lost)`);
  }

  #page(page: Buffer, out: OggPacket[]): void {
    const where = `page ${this.#pages} (byte ${this.#offset})`;
    const crc = oggCrc(page.subarray(26), oggCrc(ZERO_CRC, oggCrc(page.subarray(0, 22))));
    if (crc !== page.readUInt32LE(22)) throw bad(`${where} fails its checksum`);
    const flags = page[5] as number;
    const serial = page.readUInt32LE(14);
    const sequence = page.readUInt32LE(18);
    if (flags & FLAG_BOS) {
      if (this.#serial !== undefined)
        throw bad(`${where} starts a second logical stream inside the first (multiplexed Ogg is not read)`);
      this.#serial = serial;
      this.#started = false;
    } else {
      if (this.#serial === undefined)
        throw bad(`${where} belongs to no stream (no beginning-of-stream page before it)`);
      if (serial !== this.#serial) throw bad(`${where} belongs to another logical stream (serial ${serial})`);
      if (sequence !== this.#sequence + 1)
        throw bad(`${where} is out of sequence (${sequence} after ${this.#sequence})`);
    }
    this.#sequence = sequence;
    this.#pages++;
    const continued = (flags & FLAG_CONTINUED) !== 0;
    if (continued !== this.#partialBytes > 0)
      throw bad(
        continued ? `${where} continues a packet that was never started` : `${where} drops a packet left unfinished`,
      );
    const segments = page[26] as number;
    let at = HEADER_BYTES + segments;
    let start = at;
    for (let i = 0; i < segments; i++) {
      const lace = page[HEADER_BYTES + i] as number;
      at += lace;
      if (lace === 255) continue;
      this.#emit(page.subarray(start, at), out);
      start = at;
    }
    // A last lacing value of 255: the packet goes on in the next page.
    if (start < at) this.#keep(page.subarray(start, at));
    if (flags & FLAG_EOS) {
      if (this.#partialBytes > 0) throw bad(`${where} ends the stream inside a packet`);
      this.#serial = undefined;
    }
  }

  #keep(piece: Uint8Array): void {
    this.#partialBytes += piece.byteLength;
    if (this.#partialBytes > this.#maxPacketBytes)
      throw bad(`a packet over ${this.#maxPacketBytes} bytes (page ${this.#pages})`);
    // Copied: the page's bytes are not kept.
    this.#partial.push(Uint8Array.from(piece));
  }

  #emit(tail: Uint8Array, out: OggPacket[]): void {
    let data = tail;
    if (this.#partialBytes > 0) {
      this.#keep(tail);
      data = Buffer.concat(this.#partial, this.#partialBytes);
      this.#partial = [];
      this.#partialBytes = 0;
    } else if (tail.byteLength > this.#maxPacketBytes) {
      throw bad(`a packet over ${this.#maxPacketBytes} bytes (page ${this.#pages})`);
    }
    out.push({ data, first: !this.#started });
    this.#started = true;
  }
}
