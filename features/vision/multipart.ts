/**
 * @module A streaming reader of the one multipart/form-data body the camera sends (a `question`
 * field, then a `file` part): fed chunk by chunk as they arrive, it keeps only the unclassified
 * tail (shorter than the boundary) and the parts it is asked for, and throws as soon as a bound is
 * passed, so an oversized upload is refused while it streams, never read whole first.
 */

export interface MultipartLimits {
  /** Bytes of the `file` part at most (413 past it). */
  maxFileBytes: number;
  /** Bytes of any other field at most (the question). */
  maxFieldBytes: number;
  /** Parts at most. */
  maxParts: number;
  /** Bytes of one part's header block at most. */
  maxHeaderBytes: number;
}

/** A bound passed or a malformed body; `status` is what the endpoint answers. */
export class MultipartError extends Error {
  readonly status: 400 | 413;
  constructor(status: 400 | 413, message: string) {
    super(message);
    this.status = status;
  }
}

export interface FilePart {
  filename: string;
  contentType: string;
  data: Buffer;
}

/** The boundary of a `multipart/form-data` Content-Type, or null. */
export function boundaryOf(contentType: string | undefined): string | null {
  if (!contentType) return null;
  const [type, ...params] = contentType.split(';');
  if (type?.trim().toLowerCase() !== 'multipart/form-data') return null;
  for (const p of params) {
    const m = /^\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s";]{1,70}))\s*$/i.exec(p);
    if (m) return m[1] ?? m[2] ?? null;
  }
  return null;
}

type State = 'preamble' | 'after_boundary' | 'headers' | 'body' | 'done';

interface Part {
  name: string;
  filename: string | undefined;
  contentType: string;
  chunks: Buffer[];
  bytes: number;
  /** Kept (question, file) or only counted (any other field). */
  keep: boolean;
}

/** Bytes of preamble and epilogue tolerated (the firmware sends none). */
const MAX_PREAMBLE = 1024;
const HEADER_END = Buffer.from('\r\n\r\n');

function param(disposition: string, name: string): string | undefined {
  const m = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^\\s;]+))`, 'i').exec(disposition);
  return m ? (m[1] ?? m[2]) : undefined;
}

export class MultipartReader {
  readonly #limits: MultipartLimits;
  /** `--boundary`: the first delimiter has no CRLF before it. */
  readonly #dashBoundary: Buffer;
  /** `\r\n--boundary`: every later one. */
  readonly #delimiter: Buffer;
  #state: State = 'preamble';
  #tail: Buffer = Buffer.alloc(0);
  #part: Part | undefined;
  #parts = 0;
  #epilogue = 0;
  readonly fields = new Map<string, string>();
  file: FilePart | undefined;

  constructor(boundary: string, limits: MultipartLimits) {
    this.#limits = limits;
    this.#dashBoundary = Buffer.from(`--${boundary}`);
    this.#delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  get done(): boolean {
    return this.#state === 'done';
  }

  /** Takes the next chunk of the body; throws a `MultipartError` at the first bound passed. */
  push(chunk: Buffer): void {
    let buf: Buffer = this.#tail.length === 0 ? chunk : Buffer.concat([this.#tail, chunk]);
    for (;;) {
      switch (this.#state) {
        case 'preamble': {
          const at = buf.indexOf(this.#dashBoundary);
          if (at < 0) {
            if (buf.length > MAX_PREAMBLE) throw new MultipartError(400, 'no multipart boundary found');
            this.#tail = buf;
            return;
          }
          if (at > MAX_PREAMBLE) throw new MultipartError(400, 'no multipart boundary found');
          buf = buf.subarray(at + this.#dashBoundary.length);
          this.#state = 'after_boundary';
          continue;
        }
        case 'after_boundary': {
          if (buf.length < 2) {
            this.#tail = buf;
            return;
          }
          if (buf[0] === 0x2d && buf[1] === 0x2d) {
            this.#state = 'done';
            buf = buf.subarray(2);
            continue;
          }
          if (buf[0] !== 0x0d || buf[1] !== 0x0a) throw new MultipartError(400, 'malformed multipart boundary line');
          buf = buf.subarray(2);
          this.#state = 'headers';
          continue;
        }
        case 'headers': {
          const at = buf.indexOf(HEADER_END);
          const limit = this.#limits.maxHeaderBytes;
          if (at < 0 || at > limit) {
            if (buf.length > limit || at > limit) throw new MultipartError(400, 'multipart part headers too large');
            this.#tail = buf;
            return;
          }
          this.#startPart(buf.subarray(0, at).toString('latin1'));
          buf = buf.subarray(at + HEADER_END.length);
          this.#state = 'body';
          continue;
        }
        case 'body': {
          const at = buf.indexOf(this.#delimiter);
          if (at < 0) {
            // All but a possible start of the delimiter belongs to the part.
            const safe = Math.max(0, buf.length - (this.#delimiter.length - 1));
            this.#append(buf.subarray(0, safe));
            this.#tail = Buffer.from(buf.subarray(safe));
            return;
          }
          this.#append(buf.subarray(0, at));
          this.#endPart();
          buf = buf.subarray(at + this.#delimiter.length);
          this.#state = 'after_boundary';
          continue;
        }
        case 'done': {
          this.#epilogue += buf.length;
          if (this.#epilogue > MAX_PREAMBLE) throw new MultipartError(400, 'data after the closing boundary');
          this.#tail = Buffer.alloc(0);
          return;
        }
      }
    }
  }

  /** The body ended: it must have closed its last part. */
  end(): void {
    if (this.#state !== 'done') throw new MultipartError(400, 'multipart body ended early');
  }

  #startPart(headerText: string): void {
    this.#parts++;
    if (this.#parts > this.#limits.maxParts) throw new MultipartError(400, 'too many multipart parts');
    let disposition = '';
    let contentType = 'text/plain';
    for (const line of headerText.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw new MultipartError(400, 'malformed multipart part header');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-disposition') disposition = value;
      else if (name === 'content-type') contentType = value.toLowerCase();
    }
    if (!/^form-data\s*(;|$)/i.test(disposition)) throw new MultipartError(400, 'a part is not form-data');
    const name = param(disposition, 'name');
    if (name === undefined) throw new MultipartError(400, 'a part has no name');
    const filename = param(disposition, 'filename');
    const keep = name === 'file' ? this.file === undefined : !this.fields.has(name) && name === 'question';
    this.#part = { name, filename, contentType, chunks: [], bytes: 0, keep };
  }

  #append(data: Buffer): void {
    const part = this.#part;
    if (!part || data.length === 0) return;
    part.bytes += data.length;
    if (part.name === 'file') {
      if (part.bytes > this.#limits.maxFileBytes) throw new MultipartError(413, 'image too large');
    } else if (part.bytes > this.#limits.maxFieldBytes) {
      throw new MultipartError(400, `field ${part.name.slice(0, 32)} too long`);
    }
    // Copied: the chunk's memory belongs to the socket's stream.
    if (part.keep) part.chunks.push(Buffer.from(data));
  }

  #endPart(): void {
    const part = this.#part;
    this.#part = undefined;
    if (!part?.keep) return;
    const data = Buffer.concat(part.chunks, part.bytes);
    if (part.name === 'file') this.file = { filename: part.filename ?? '', contentType: part.contentType, data };
    else this.fields.set(part.name, data.toString('utf8'));
  }
}
