/**
 * @module One utterance recognised while it is spoken: the session's streaming recogniser fed from
 * the listener's audio, its partial transcripts handed to the end of turn, its final handed to the
 * turn. Owned by the conversation, one at a time; cancelled with the utterance (a new `listen
 * start`, an abort, the session's end), so no vendor connection outlives what it was for.
 *
 * The final is bounded twice: by the provider (`finalTimeoutMs`, its own) and here, so a provider
 * that breaks its contract still cannot hold a turn.
 */
import { linkedScope, type Scope } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { AsrStream, StreamingAsr } from '../../audio/asr/asr.ts';

/** The longest a turn waits for a final after the end of speech, whatever the provider does. */
const FINAL_BOUND_MS = 10_000;

export class Recognition {
  readonly #scope: Scope;
  readonly #stream: AsrStream;
  readonly #log: Logger;
  #partial = '';
  #final: Promise<string> | undefined;

  /** Opens a stream on `asr` (which must have `openStream`); `onPartial` gets each new hypothesis. */
  constructor(
    asr: StreamingAsr,
    opts: { sampleRate: number; parent: AbortSignal; log: Logger; onPartial: (text: string) => void },
  ) {
    this.#log = opts.log;
    this.#scope = linkedScope(opts.parent);
    this.#stream = asr.openStream({
      sampleRate: opts.sampleRate,
      signal: this.#scope.signal,
      log: opts.log,
      onPartial: (text) => {
        if (this.#scope.signal.aborted || this.#final) return;
        this.#partial = text;
        opts.onPartial(text);
      },
    });
  }

  /** The latest partial transcript ('' before any). */
  get partial(): string {
    return this.#partial;
  }

  push(pcm: Int16Array): void {
    if (!this.#scope.signal.aborted && !this.#final) this.#stream.push(pcm);
  }

  /** The utterance is over: the final transcript, within FINAL_BOUND_MS. */
  finish(): Promise<string> {
    this.#final ??= this.#finish();
    return this.#final;
  }

  async #finish(): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new VoiceError(ErrorCode.Timeout, 'streaming recognition gave no final', { retryable: true })),
        FINAL_BOUND_MS,
      );
    });
    const final = this.#stream.finish();
    // Lost the race to the bound: its later rejection (the scope's abort) is nobody's business.
    final.catch(() => {});
    try {
      const text = await Promise.race([final, bound]);
      this.#log.debug({ pii: { text } }, 'streaming recognition final');
      return text;
    } finally {
      clearTimeout(timer);
      // The stream is done with: its connection and timers go, whatever the outcome.
      this.#scope.abort('recognition finished');
      this.#scope.dispose();
    }
  }

  /** Drops the utterance's recognition (no final wanted). */
  cancel(reason: string): void {
    if (this.#scope.signal.aborted) return;
    this.#scope.abort(reason);
    this.#scope.dispose();
  }
}
