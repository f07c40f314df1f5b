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
 *
 * The bidirectional TTS (`/api/v3/tts/bidirection`) uses the same header with an event number
 * after it (flags 0b0100), then an id (the session's, or the connection's on the Connection*
 * events; none on the client's StartConnection and FinishConnection), then the payload:
 * `encodeEventFrame` and `decodeEventFrame`.
 */
import { gunzipSync, gzipSync } from 'node:zlib';

const PROTOCOL_VERSION = 0b0001;
const HEADER_WORDS = 0b0001;

const TYPE_FULL_CLIENT_REQUEST = 0b0001;
const TYPE_AUDIO_ONLY_REQUEST = 0b0010;
const TYPE_FULL_SERVER_RESPONSE = 0b1001;
const TYPE_AUDIO_ONLY_RESPONSE = 0b1011;
const TYPE_ERROR = 0b1111;

/** Flag bit 0: a 4-byte sequence follows the header. Bit 1: the last packet (or the final response). */
const FLAG_SEQUENCE = 0b0001;
const FLAG_LAST = 0b0010;
/** The frame carries an int32 event number after its header (the TTS protocol's frames). */
const FLAG_EVENT = 0b0100;

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
  int32(what: string): number {
    const v = this.uint32(what);
    return v | 0;
  }
  /** A uint32 size and that many bytes (bytes after them are ignored, as the vendor's own parsers do). */
  sized(what: string): Buffer {
    const size = this.uint32(`${what} size`);
    const rest = this.#data.length - this.#at;
    if (size > rest) throw new FrameError(`${what} size ${size} is more than the ${rest} bytes that follow`);
    const out = this.#data.subarray(this.#at, this.#at + size);
    this.#at += size;
    return out;
  }
  /** `sized`, or undefined when the frame has ended. */
  optionalSized(what: string): Buffer | undefined {
    return this.#at >= this.#data.length ? undefined : this.sized(what);
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

/** The TTS protocol's Connection* server events, whose id is the connection's (50, 51, 52). */
function isConnectionEvent(event: number): boolean {
  return event >= 50 && event <= 52;
}

/**
 * A TTS client event: header `11 14 10 00` (full client request, event flag, JSON, uncompressed),
 * the event, the session id when given (StartConnection and FinishConnection have none), the JSON.
 */
export function encodeEventFrame(event: number, id: string | undefined, payload: object): Buffer {
  const body = Buffer.from(JSON.stringify(payload));
  const idBytes = id === undefined ? undefined : Buffer.from(id);
  const out = Buffer.allocUnsafe(8 + (idBytes ? 4 + idBytes.length : 0) + 4 + body.length);
  out[0] = (PROTOCOL_VERSION << 4) | HEADER_WORDS;
  out[1] = (TYPE_FULL_CLIENT_REQUEST << 4) | FLAG_EVENT;
  out[2] = (SERIALIZATION_JSON << 4) | COMPRESSION_NONE;
  out[3] = 0;
  out.writeInt32BE(event, 4);
  let at = 8;
  if (idBytes) {
    out.writeUInt32BE(idBytes.length, at);
    idBytes.copy(out, at + 4);
    at += 4 + idBytes.length;
  }
  out.writeUInt32BE(body.length, at);
  body.copy(out, at + 4);
  return out;
}

/**
 * A decoded TTS server frame: an event (JSON not yet parsed, or audio bytes when `audio`), or the
 * vendor's error frame (code and message).
 */
export type EventFrame =
  | { kind: 'event'; event: number; audio: boolean; id: string | undefined; payload: Buffer }
  | { kind: 'error'; code: number; message: string };

/**
 * Reads one TTS server frame; `maxInflated` caps a gzip payload. Throws FrameError.
 *
 * The Connection* events are read in both shapes seen: the connection id then the payload (the
 * vendor's demo), or a single string (what xinnan's client reads), which is then the payload. The
 * header's serialisation nibble is not trusted (the vendor's own clients key on the event alone);
 * audio is what comes in an audio-only response.
 */
export function decodeEventFrame(data: Buffer, maxInflated: number): EventFrame {
  if (data.length < 4) throw new FrameError(`frame of ${data.length} bytes is shorter than its header`);
  const version = data[0]! >> 4;
  const headerBytes = (data[0]! & 0x0f) * 4;
  const type = data[1]! >> 4;
  const flags = data[1]! & 0x0f;
  const compression = data[2]! & 0x0f;
  if (version !== PROTOCOL_VERSION) throw new FrameError(`unknown protocol version ${version}`);
  if (headerBytes < 4 || headerBytes > data.length) throw new FrameError(`bad header size ${headerBytes}`);
  const reader = new Reader(data, headerBytes);
  if (type === TYPE_ERROR) {
    const code = reader.uint32('error code');
    const bytes = inflate(reader.sized('error message'), compression, maxInflated);
    return { kind: 'error', code, message: errorText(bytes) };
  }
  if (type !== TYPE_FULL_SERVER_RESPONSE && type !== TYPE_AUDIO_ONLY_RESPONSE)
    throw new FrameError(`unexpected message type 0b${type.toString(2)}`);
  if ((flags & FLAG_EVENT) === 0) throw new FrameError(`a response without an event (flags 0b${flags.toString(2)})`);
  const event = reader.int32('event');
  let id: string | undefined;
  let payload: Buffer;
  if (isConnectionEvent(event)) {
    const first = reader.optionalSized('connection id');
    const second = reader.optionalSized('payload');
    if (second === undefined) payload = first ?? Buffer.alloc(0);
    else {
      id = first?.toString('utf8');
      payload = second;
    }
  } else {
    id = reader.sized('session id').toString('utf8');
    payload = reader.optionalSized('payload') ?? Buffer.alloc(0);
  }
  return {
    kind: 'event',
    event,
    audio: type === TYPE_AUDIO_ONLY_RESPONSE,
    id,
    payload: inflate(payload, compression, maxInflated),
  };
}
