/**
 * @module Any byte stream ffmpeg can read (mp3, wav, ogg/opus, aac/m4a, flac, …) → PCM s16le
 * mono at a chosen rate, through Debian's `ffmpeg` spawned directly (fluent-ffmpeg is archived
 * upstream and only wraps the same command line). One process per stream: its start-up costs
 * 60-90 ms, so callers should use it per audio stream (a song, an mp3 TTS answer), never per
 * sentence of PCM they could resample in-process (see audio/pcm/resample.ts).
 *
 * Backpressure runs end to end: the consumer pulls PCM from ffmpeg's stdout; while it does not,
 * ffmpeg blocks on its full stdout pipe, stops reading stdin, and the input is not read further.
 */
import { nextUnlessAborted, throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { spawnManaged, writeWithBackpressure } from '../process/child-process.ts';
import { ByteAligner } from '../pcm/pcm.ts';

export interface TranscodeOptions {
  /** Output sample rate in Hz. */
  sampleRate: number;
  signal: AbortSignal;
  log?: Logger;
  /** ffmpeg demuxer name (`mp3`, `ogg`, `wav`, `s16le`, …) when probing is not wanted or cannot work. */
  inputFormat?: string;
  /** Extra input options, e.g. `['-ar', '24000', '-ac', '1']` for raw `s16le` input. */
  inputArgs?: readonly string[];
  /** Executable name or path (default `ffmpeg`). */
  ffmpegPath?: string;
}

/** The ffmpeg argument list for a decode-to-PCM run (exported for the bench and docs). */
export function transcodeArgs(opts: Pick<TranscodeOptions, 'sampleRate' | 'inputFormat' | 'inputArgs'>): string[] {
  return [
    '-hide_banner',
    '-nostdin', // no interactive keys; input still comes from pipe:0
    '-loglevel',
    'error',
    ...(opts.inputFormat ? ['-f', opts.inputFormat] : []),
    ...(opts.inputArgs ?? []),
    '-i',
    'pipe:0',
    '-vn',
    '-ac',
    '1',
    '-ar',
    String(opts.sampleRate),
    '-f',
    's16le',
    '-acodec',
    'pcm_s16le',
    'pipe:1',
  ];
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/**
 * Decodes `input` to mono s16 PCM at `opts.sampleRate`. Yields chunks as ffmpeg produces them.
 * Errors: `BadInput` naming ffmpeg's complaint (stderr tail) for undecodable input,
 * `ProviderUnavailable` when ffmpeg is not installed, `Aborted` on abort. The child is killed on
 * abort, on early return by the consumer, and on any error, including an error of `input`.
 */
export async function* transcodeToPcm(
  input: AsyncIterable<Uint8Array> | Uint8Array,
  opts: TranscodeOptions,
): AsyncGenerator<Int16Array> {
  const { signal, log } = opts;
  throwIfAborted(signal);
  const source = input instanceof Uint8Array ? once(input) : input;
  const cmd = opts.ffmpegPath ?? 'ffmpeg';
  const stop = new AbortController(); // ends the input pump however the generator ends
  const child = spawnManaged(cmd, transcodeArgs(opts), { signal });
  const started = performance.now();
  let inputError: unknown;
  let inputBytes = 0;

  const pump = (async () => {
    const it = source[Symbol.asyncIterator]();
    try {
      for (;;) {
        const r = await nextUnlessAborted(it, stop.signal);
        if (r.done) break;
        inputBytes += r.value.byteLength;
        if (!(await writeWithBackpressure(child.proc, r.value, stop.signal))) break;
      }
    } catch (err) {
      inputError = err;
      child.kill();
    } finally {
      if (stop.signal.aborted) void Promise.resolve(it.return?.()).catch(() => {});
      if (!child.proc.stdin.destroyed) child.proc.stdin.end();
    }
  })();

  let outBytes = 0;
  let firstByteMs: number | undefined;
  try {
    const aligner = new ByteAligner();
    for await (const chunk of child.proc.stdout as AsyncIterable<Buffer>) {
      throwIfAborted(signal);
      if (firstByteMs === undefined) firstByteMs = performance.now() - started;
      outBytes += chunk.byteLength;
      const pcm = aligner.push(chunk);
      if (pcm.length > 0) yield pcm;
    }
    const exit = await child.exited;
    stop.abort(); // ffmpeg is gone: a source that is still producing is not read further
    await pump;
    throwIfAborted(signal);
    if (inputError !== undefined) {
      throw new VoiceError(ErrorCode.BadInput, 'transcode input stream failed', { cause: inputError });
    }
    if (exit.error) {
      throw new VoiceError(ErrorCode.ProviderUnavailable, `cannot start ${cmd}: ${exit.error.message}`, {
        cause: exit.error,
      });
    }
    if (exit.code !== 0) {
      const tail = child.stderrTail() || `exit code ${exit.code ?? exit.signal}`;
      log?.warn({ code: exit.code, inputBytes, stderr: tail }, 'ffmpeg could not decode input');
      throw new VoiceError(ErrorCode.BadInput, `ffmpeg could not decode the input: ${lastLine(tail)}`);
    }
    log?.debug({ inputBytes, outBytes, firstByteMs, ms: performance.now() - started }, 'ffmpeg transcode done');
  } finally {
    stop.abort();
    child.kill();
    await child.exited; // SIGKILL: settles promptly; nothing is left in the process table
  }
}

function lastLine(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  return lines.slice(-2).join(' | ');
}
