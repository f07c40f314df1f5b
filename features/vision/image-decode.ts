/**
 * @module The photo's real decode, after its header check (image-check.ts): the bytes go to
 * ffmpeg, which must decode every pixel without an error (`-xerror -err_detect explode`: a
 * corrupt or truncated JPEG scan, a PNG whose zlib data is broken). ffmpeg is told the format
 * (`jpeg_pipe` / `png_pipe` and its decoder), so no other demuxer ever reads a stranger's bytes.
 * Bounded: at most `maxConcurrent` decodes at once in the process (one more is refused, busy), each
 * within `timeoutMs` (killed past it), killed when the request goes away, and awaited until the
 * process is gone. Without ffmpeg (not installed), said once at start, photos are sent on after
 * the header check alone.
 */
import type { Logger } from '../../core/logger.ts';
import { truncateForLog } from '../../core/log-fields.ts';
import { spawnManaged } from '../../audio/process/child-process.ts';
import type { ImageMime } from './image-check.ts';

export interface ImageDecoderOptions {
  /** Decodes running at once at most, in the whole process. */
  maxConcurrent: number;
  /** One decode's time, ms; the process is killed past it. */
  timeoutMs: number;
  log: Logger;
  /** Executable name or path (default `ffmpeg`, from PATH, as audio/ffmpeg/ spawns it). */
  ffmpegPath?: string;
}

/**
 * decoded: every pixel decoded. unchecked: no ffmpeg, the header check alone. undecodable: ffmpeg
 * refused it (`detail`: its complaint, for the log). busy: `maxConcurrent` decodes were running.
 * timeout: not decoded within `timeoutMs`. aborted: the signal ended it.
 */
export type DecodeOutcome =
  | { kind: 'decoded' | 'unchecked' | 'busy' | 'timeout' | 'aborted' }
  | { kind: 'undecodable'; detail: string };

/** ffmpeg's arguments for a decode of one image read from stdin, its frames thrown away. */
export function decodeArgs(mime: ImageMime): string[] {
  const [format, codec] = mime === 'image/png' ? ['png_pipe', 'png'] : ['jpeg_pipe', 'mjpeg'];
  return [
    '-hide_banner',
    '-nostdin',
    '-v',
    'error',
    // Any decode error is fatal (without them, a damaged scan is concealed and exits 0).
    '-xerror',
    '-err_detect',
    'explode',
    '-threads',
    '1',
    '-f',
    format,
    '-c:v',
    codec,
    '-i',
    'pipe:0',
    '-an',
    '-sn',
    '-dn',
    '-f',
    'null',
    '-',
  ];
}

/** How long `ffmpeg -version` may take at start before ffmpeg counts as missing. */
const PROBE_TIMEOUT_MS = 10_000;

export class ImageDecoder {
  readonly #o: ImageDecoderOptions;
  readonly #cmd: string;
  #running = 0;
  #available: Promise<boolean> | undefined;
  #warnedMissing = false;

  constructor(o: ImageDecoderOptions) {
    this.#o = o;
    this.#cmd = o.ffmpegPath ?? 'ffmpeg';
  }

  /** Decodes running now. */
  get running(): number {
    return this.#running;
  }

  /** Whether ffmpeg runs (`-version`), asked once; when it does not, said once in the log. */
  ready(): Promise<boolean> {
    this.#available ??= this.#probe();
    return this.#available;
  }

  async #probe(): Promise<boolean> {
    const child = spawnManaged(this.#cmd, ['-hide_banner', '-version'], {
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    child.proc.stdout.resume();
    child.proc.stdin.end();
    const exit = await child.exited;
    const ok = exit.error === undefined && exit.code === 0;
    if (!ok) this.#missing(exit.error?.message ?? (child.stderrTail() || `exit ${exit.code ?? exit.signal}`));
    return ok;
  }

  #missing(why: string): void {
    if (this.#warnedMissing) return;
    this.#warnedMissing = true;
    this.#o.log.warn(
      { ffmpeg: this.#cmd, err: truncateForLog(why, 200) },
      'vision: ffmpeg is not available; photos are checked by their headers only, not decoded',
    );
  }

  /** Decodes `data` (which passed the header check as `mime`); see `DecodeOutcome`. */
  async decode(data: Buffer, mime: ImageMime, signal: AbortSignal): Promise<DecodeOutcome> {
    if (signal.aborted) return { kind: 'aborted' };
    if (!(await this.ready())) return { kind: 'unchecked' };
    if (signal.aborted) return { kind: 'aborted' };
    if (this.#running >= this.#o.maxConcurrent) return { kind: 'busy' };
    this.#running++;
    const late = new AbortController();
    const timer = setTimeout(() => late.abort(), this.#o.timeoutMs);
    const child = spawnManaged(this.#cmd, decodeArgs(mime), { signal: AbortSignal.any([signal, late.signal]) });
    try {
      child.proc.stdout.resume();
      child.proc.stdin.end(data);
      const exit = await child.exited;
      if (late.signal.aborted) return { kind: 'timeout' };
      if (signal.aborted) return { kind: 'aborted' };
      if (exit.error) {
        // Gone since the start (uninstalled): the header check alone, as without it.
        this.#missing(exit.error.message);
        return { kind: 'unchecked' };
      }
      const complaint = child.stderrTail();
      if (exit.code !== 0 || complaint !== '')
        return {
          kind: 'undecodable',
          detail: truncateForLog(complaint || `exit ${exit.code ?? exit.signal}`, 300) ?? '',
        };
      return { kind: 'decoded' };
    } finally {
      clearTimeout(timer);
      child.kill();
      // SIGKILLed or done: wait until it is reaped, so no decode outlives its request.
      await child.exited;
      this.#running--;
    }
  }
}
