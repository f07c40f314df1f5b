/**
 * @module The streaming engine of the embedded recogniser: every utterance is decoded by the
 * helper while it is spoken (`openStream`, partial transcripts); `transcribe` streams a whole
 * utterance at once. The helper and its models are shared by every session.
 */
import type { Asr, AsrStream, AsrStreamOptions } from '../../audio/asr/asr.ts';
import { throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { PocketsphinxHelper } from './helper.ts';
import { modelArgs } from './model-args.ts';
import type { PocketsphinxAsrOptions } from './options.ts';
import { PocketsphinxStream } from './stream.ts';

export class PocketsphinxStreamAsr implements Asr {
  readonly name = 'pocketsphinx';
  readonly #opts: PocketsphinxAsrOptions;
  readonly #log: Logger;
  readonly #helper: PocketsphinxHelper;
  readonly #cleanup: () => Promise<void>;
  #closed = false;

  private constructor(
    opts: PocketsphinxAsrOptions,
    log: Logger,
    helper: PocketsphinxHelper,
    cleanup: () => Promise<void>,
  ) {
    this.#opts = opts;
    this.#log = log;
    this.#helper = helper;
    this.#cleanup = cleanup;
  }

  /** Starts the helper (its models load in the background; utterances wait for them). */
  static async create(opts: PocketsphinxAsrOptions, log: Logger, helperPath: string): Promise<PocketsphinxStreamAsr> {
    const model = await modelArgs(opts);
    const helper = new PocketsphinxHelper({ path: helperPath, args: model.args, maxStreams: opts.maxStreams, log });
    return new PocketsphinxStreamAsr(opts, log, helper, model.cleanup);
  }

  openStream(opts: AsrStreamOptions): AsrStream {
    return new PocketsphinxStream(this.#helper, opts, this.#opts.finalTimeoutMs);
  }

  /**
   * The whole utterance through a stream: pushed at once and finished, so all of its decoding
   * happens after the call, bounded like the `continuous` engine's (3 s + twice its duration).
   * A helper that dies meanwhile costs one more try on the restarted one, as there.
   */
  async transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    throwIfAborted(opts.signal);
    if (this.#closed) throw new VoiceError(ErrorCode.ProviderUnavailable, 'pocketsphinx asr is closed');
    const timeoutMs = this.#opts.timeoutMs ?? 3000 + (2000 * pcm.length) / opts.sampleRate;
    const once = (): Promise<string> => {
      const stream = new PocketsphinxStream(
        this.#helper,
        { sampleRate: opts.sampleRate, signal: opts.signal, log: this.#log, onPartial: () => {} },
        timeoutMs,
      );
      stream.push(pcm);
      return stream.finish();
    };
    try {
      return await once();
    } catch (err) {
      if (!(err instanceof VoiceError) || err.code !== ErrorCode.ProcessFailed || opts.signal.aborted) throw err;
      return once();
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#helper.close();
    await this.#cleanup();
  }
}
