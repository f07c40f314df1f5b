/**
 * @module One streamed utterance on the pocketsphinx helper (`AsrStream`): audio goes to its
 * decoder as it is pushed, each new hypothesis of the whole utterance goes to `onPartial`, and
 * `finish` waits (at most `finalTimeoutMs`) for the final. The signal drops the utterance at once.
 */
import type { AsrStream, AsrStreamOptions } from '../../audio/asr/asr.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { resample } from '../../audio/pcm/resample.ts';
import type { HelperUtterance, PocketsphinxHelper } from './helper.ts';

const RATE = 16000;

export class PocketsphinxStream implements AsrStream {
  readonly #opts: AsrStreamOptions;
  readonly #finalTimeoutMs: number;
  readonly #utterance: HelperUtterance;
  /** Over: resolved, rejected or aborted; no callback, no audio after this. */
  #done = false;
  #error: VoiceError | undefined;
  #lastPartial = '';
  #final: Promise<string> | undefined;
  #settle: { resolve(text: string): void; reject(err: VoiceError): void } | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #onAbort = (): void => {
    this.#utterance.cancel();
    this.#end(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: this.#opts.signal.reason }));
  };

  constructor(helper: PocketsphinxHelper, opts: AsrStreamOptions, finalTimeoutMs: number) {
    this.#opts = opts;
    this.#finalTimeoutMs = finalTimeoutMs;
    this.#utterance = helper.utterance({
      partial: (text) => this.#onPartial(text),
      final: (text) => this.#end(text),
      failed: (err) => {
        if (!this.#done) opts.log.warn({ err }, 'pocketsphinx stream failed');
        this.#end(err);
      },
    });
    if (opts.signal.aborted) this.#onAbort();
    else opts.signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  push(pcm: Int16Array): void {
    if (this.#done || this.#final || pcm.length === 0) return;
    try {
      this.#utterance.push(this.#opts.sampleRate === RATE ? pcm : resample(pcm, this.#opts.sampleRate, RATE));
    } catch (err) {
      // `push` never throws (a rate the resampler refuses): the stream fails, `finish` says why.
      this.#utterance.cancel();
      this.#opts.log.warn({ err, sampleRate: this.#opts.sampleRate }, 'pocketsphinx stream: audio refused');
      this.#end(new VoiceError(ErrorCode.BadInput, 'pocketsphinx stream: audio refused', { cause: err }));
    }
  }

  finish(): Promise<string> {
    this.#final ??= new Promise<string>((resolve, reject) => {
      if (this.#error) {
        reject(this.#error);
        return;
      }
      this.#settle = { resolve, reject };
      this.#utterance.finish();
      this.#timer = setTimeout(() => {
        this.#utterance.cancel();
        this.#opts.log.warn({ timeoutMs: this.#finalTimeoutMs }, 'pocketsphinx final timed out');
        this.#end(
          new VoiceError(ErrorCode.Timeout, `pocketsphinx final timed out after ${this.#finalTimeoutMs} ms`, {
            retryable: true,
          }),
        );
      }, this.#finalTimeoutMs);
    });
    return this.#final;
  }

  #onPartial(raw: string): void {
    const text = raw.trim();
    if (this.#done || text === this.#lastPartial) return;
    this.#lastPartial = text;
    this.#opts.log.debug({ pii: { text } }, 'pocketsphinx partial');
    this.#opts.onPartial(text);
  }

  /** Ends the stream once, with the final text or an error (kept for `finish` if not yet asked). */
  #end(outcome: string | VoiceError): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    this.#opts.signal.removeEventListener('abort', this.#onAbort);
    if (typeof outcome === 'string') {
      const text = outcome.trim();
      this.#opts.log.debug({ pii: { text } }, 'pocketsphinx final');
      this.#settle?.resolve(text);
      // The helper sends a final only after 'F'; kept anyway, so `finish` never waits on a stream already over.
      if (!this.#settle) this.#final = Promise.resolve(text);
    } else {
      this.#error = outcome;
      this.#settle?.reject(outcome);
    }
    this.#settle = undefined;
  }
}
