/**
 * @module espeak-ng TTS (Debian `espeak-ng`): the embedded default. It streams: the WAV header
 * and the first PCM arrive 10-15 ms after start, then PCM in many chunks while it synthesises.
 * Output is 22,050 Hz mono s16 WAV whose data length is a placeholder (0x7FFFF000); the
 * in-process path in `to-pcm.ts` ignores it and resamples without ffmpeg.
 * Text goes through stdin (not argv), so a sentence starting with "-" is never read as an option.
 */
import { throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { spawnManaged } from '../child-process.ts';
import type { EspeakTtsOptions, Tts, TtsOutputFormat } from './tts.ts';

export class EspeakTts implements Tts {
  readonly name = 'espeak';
  readonly outputFormat: TtsOutputFormat = { container: 'wav' };
  readonly #opts: EspeakTtsOptions;
  readonly #log: Logger;

  constructor(opts: EspeakTtsOptions, log: Logger) {
    this.#opts = opts;
    this.#log = log;
  }

  /**
   * Creates the provider after checking that espeak-ng runs and knows the voice: espeak-ng
   * silently falls back to its default voice for an unknown name, so a typo in `tts.voice` would
   * otherwise be heard, not reported. Variants (`en-us+f3`) are checked by their base voice.
   */
  static async create(opts: EspeakTtsOptions, log: Logger): Promise<EspeakTts> {
    const cmd = opts.command ?? 'espeak-ng';
    const voice = opts.voice ?? 'en-us';
    const child = spawnManaged(cmd, ['--voices']);
    child.proc.stdin.end();
    let listing = '';
    child.proc.stdout.setEncoding('utf8').on('data', (d: string) => (listing += d));
    const exit = await child.exited;
    if (exit.error || exit.code !== 0) {
      throw new VoiceError(ErrorCode.ProviderUnavailable, `cannot run ${cmd} --voices: ${exit.error?.message ?? child.stderrTail()}`, { cause: exit.error });
    }
    const known = new Set<string>();
    for (const line of listing.split('\n').slice(1)) {
      // Pty Language Age/Gender VoiceName File Other-languages
      const cols = line.trim().split(/\s+/);
      if (cols.length < 5) continue;
      for (const name of [cols[1], cols[3], cols[4], cols[4]?.split('/').pop()]) if (name) known.add(name.toLowerCase());
    }
    const base = (voice.split('+')[0] ?? voice).toLowerCase();
    if (!known.has(base)) {
      throw new VoiceError(ErrorCode.ConfigInvalid, `espeak-ng voice '${voice}' does not exist (see \`espeak-ng --voices\`)`);
    }
    return new EspeakTts(opts, log);
  }

  /** The argument list for one utterance (text comes on stdin). */
  args(): string[] {
    const o = this.#opts;
    return [
      '--stdout',
      '-b',
      '1', // input is UTF-8
      '-v',
      o.voice ?? 'en-us',
      ...(o.speed !== undefined ? ['-s', String(Math.round(o.speed))] : []),
      ...(o.pitch !== undefined ? ['-p', String(Math.round(o.pitch))] : []),
    ];
  }

  async *synthesize(text: string, opts: { signal: AbortSignal }): AsyncGenerator<Buffer> {
    const { signal } = opts;
    throwIfAborted(signal);
    const cmd = this.#opts.command ?? 'espeak-ng';
    const started = performance.now();
    const child = spawnManaged(cmd, this.args(), { signal });
    child.proc.stdin.end(text.replace(/\s+/g, ' ').trim() + '\n');
    let bytes = 0;
    try {
      for await (const chunk of child.proc.stdout as AsyncIterable<Buffer>) {
        throwIfAborted(signal);
        if (bytes === 0) this.#log.debug({ ms: performance.now() - started }, 'espeak first byte');
        bytes += chunk.byteLength;
        yield chunk;
      }
      const exit = await child.exited;
      throwIfAborted(signal);
      if (exit.error) throw new VoiceError(ErrorCode.ProviderUnavailable, `cannot start ${cmd}: ${exit.error.message}`, { cause: exit.error });
      // espeak-ng exits 0 even for an unknown voice; it then prints an error and writes nothing.
      if (exit.code !== 0 || bytes === 0) {
        const tail = child.stderrTail();
        this.#log.warn({ code: exit.code, voice: this.#opts.voice, stderr: tail }, 'espeak-ng produced no audio');
        throw new VoiceError(ErrorCode.ProviderFailed, `espeak-ng failed: ${tail || `exit code ${exit.code}`}`);
      }
    } finally {
      child.kill();
      await child.exited;
    }
  }

  async close(): Promise<void> {}
}
