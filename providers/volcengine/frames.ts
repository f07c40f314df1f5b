/**
 * @module The sauc protocol's binary frames, as the client writes and reads them. Every frame is a
 * WebSocket binary message: a 4-byte header (protocol version and header size; message type and
 * its flags; serialisation and compression), then, on server responses with a sequence flag, an
 * int32 sequence, then a uint32 payload size and the payload.
 *
 * The client sends no sequence numbers (flags 0 on every packet, "last packet" on the final one),
 * as the most used production client (xinnan's xiaozhi-esp32-server) does, so the stand-in is
 * checked against that client on exactly the framing ours sends. Payloads are gzip, as documented.
 * Reading honours the compression nibble (real servers answer uncompressed JSON) and inflates
 * through a cap, so a small gzip bomb cannot become a large buffer.
 */
import { gunzipSync, gzipSync } from 'node:zlib';

const PROTOCOL_VERSION = 0b0001;
const HEADER_WORDS = 0b0001;

const TYPE_FULL_CLIENT_REQUEST = 0b0001;
const TYPE_AUDIO_ONLY_REQUEST = 0b0010;
const TYPE_FULL_SERVER_RESPONSE = 0b1001;
const TYPE_ERROR = 0b1111;

/** Flag bit 0: a 4-byte sequence follows the header. Bit 1: the last packet (or the final response). */
const FLAG_SEQUENCE = 0b0001;
const FLAG_LAST = 0b0010;

const SERIALIZATION_NONE = 0b0000;
const SERIALIZATION_JSON = 0b0001;
const COMPRESSION_NONE = 0b0000;
const COMPRESSION_GZIP = 0b0001;

/**
 * Gzip level for outgoing audio: PCM hardly compresses at any level, and level 1 costs the main
 * thread the least per packet. The vendor reads any valid gzip stream.
 */
const AUDIO_GZIP_LEVEL = 1;

function frame(type: number, flags: number, serialization: number, payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(8 + payload.length);
  out[0] = (PROTOCOL_VERSION << 4) | HEADER_WORDS;
  out[1] = (type << 4) | flags;
  out[2] = (serialization << 4) | COMPRESSION_GZIP;
  out[3] = 0;
  out.writeUInt32BE(payload.length, 4);
  payload.copy(out, 8);
  return out;
}

/** The first frame of a connection: the request's settings as gzip JSON. */
export function encodeFullClientRequest(request: object): Buffer {
  return frame(TYPE_FULL_CLIENT_REQUEST, 0, SERIALIZATION_JSON, gzipSync(JSON.stringify(request)));
}

/** One packet of s16le audio; `last` marks the end of the utterance (its payload may be empty). */
export function encodeAudioPacket(pcm: Uint8Array, last: boolean): Buffer {
  return frame(
    TYPE_AUDIO_ONLY_REQUEST,
    last ? FLAG_LAST : 0,
    SERIALIZATION_NONE,
    gzipSync(pcm, { level: AUDIO_GZIP_LEVEL }),
  );
}

/** A decoded server frame: a response (its JSON not yet validated) or the vendor's error. */
export type ServerFrame =
  | { kind: 'response'; last: boolean; payload: unknown }
  | { kind: 'error'; code: number; message: string };

/** A frame that breaks the protocol; the stream fails with `provider_failed`. */
export class FrameError extends Error {
  override readonly name = 'FrameError';
}

/** Reads one server frame; `maxInflated` caps a gzip payload's decompressed size. Throws FrameError. */
export function decodeServerFrame(data: Buffer, maxInflated: number): ServerFrame {
  if (data.length < 4) throw new FrameError(`frame of ${data.length} bytes is shorter than its header`);
  const version = data[0]! >> 4;
  const headerBytes = (data[0]! & 0x0f) * 4;
  const type = data[1]! >> 4;
  const flags = data[1]! & 0x0f;
  const serialization = data[2]! >> 4;
  const compression = data[2]! & 0x0f;
  if (version !== PROTOCOL_VERSION) throw new FrameError(`unknown protocol version ${version}`);
  if (headerBytes < 4 || headerBytes > data.length) throw new FrameError(`bad header size ${headerBytes}`);
  const reader = new Reader(data, headerBytes);
  if (type === TYPE_ERROR) {
    const code = reader.uint32('error code');
    const bytes = inflate(reader.sized('error message'), compression, maxInflated);
    return { kind: 'error', code, message: errorText(bytes) };
  }
  if (type !== TYPE_FULL_SERVER_RESPONSE) throw new FrameError(`unexpected message type 0b${type.toString(2)}`);
  if (flags & FLAG_SEQUENCE) reader.uint32('sequence');
  const bytes = inflate(reader.sized('payload'), compression, maxInflated);
  if (serialization !== SERIALIZATION_JSON) throw new FrameError(`response serialisation ${serialization} is not JSON`);
  let payload: unknown;
  try {
    payload = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new FrameError('response payload is not JSON');
  }
  return { kind: 'response', last: (flags & FLAG_LAST) !== 0, payload };
}

class Reader {
  readonly #data: Buffer;
  #at: number;
  constructor(data: Buffer, at: number) {
    this.#data = data;
    this.#at = at;
  }
  uint32(what: string): number {
    if (this.#at + 4 > this.#data.length) throw new FrameError(`frame ends inside its ${what}`);
    const v = this.#data.readUInt32BE(this.#at);
    this.#at += 4;
    return v;
  }
  /** A uint32 size and that many bytes (bytes after them are ignored, as the vendor's own parsers do). */
  sized(what: string): Buffer {
    const size = this.uint32(`${what} size`);
    const rest = this.#data.length - this.#at;
    if (size > rest) throw new FrameError(`${what} size ${size} is more than the ${rest} bytes that follow`);
    return this.#data.subarray(this.#at, this.#at + size);
  }
}

function inflate(bytes: Buffer, compression: number, maxInflated: number): Buffer {
  if (compression === COMPRESSION_NONE) return bytes;
  if (compression !== COMPRESSION_GZIP) throw new FrameError(`unknown compression ${compression}`);
  try {
    return gunzipSync(bytes, { maxOutputLength: maxInflated });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE')
      throw new FrameError(`gzip payload inflates past ${maxInflated} bytes`);
    throw new FrameError('payload is not valid gzip');
  }
}

/** An error frame's message: JSON `{"error": …}` as documented, else the text as it came. */
function errorText(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && 'error' in parsed && typeof parsed.error === 'string')
      return parsed.error;
  } catch {
    // Not JSON: the text itself is the message.
  }
  return text;
}
