/**
 * @module Speech recognition by a self-hosted FunASR runtime over its WebSocket protocol,
 * streamed while the user speaks (`openStream`, one connection per utterance: stream.ts). The
 * batch `transcribe` streams the whole utterance at once.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { transcribeAsOneStream, type Asr, type AsrStream, type AsrStreamOptions } from '../../audio/asr/asr.ts';
import { linkedScope, type Scope } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { FunasrPeer } from './connect.ts';
import type { FunasrAsrOptions } from './options.ts';
import { FunasrStream } from './stream.ts';

export class FunasrAsr implements Asr {
  readonly name = 'funasr';
  readonly #opts: FunasrAsrOptions;
  readonly #log: Logger;
  readonly #ca: Buffer | undefined;
  readonly #peer: FunasrPeer = { offerBinary: true };
  /** The scopes of the streams not ended yet (`close` aborts them). */
  readonly #live = new Set<Scope>();

  private constructor(opts: FunasrAsrOptions, log: Logger, ca: Buffer | undefined) {
    this.#opts = opts;
    this.#log = log;
    this.#ca = ca;
  }

  /** Reads the `ca` file now, so a wrong path stops the start-up instead of every utterance. */
  static async create(opts: FunasrAsrOptions, log: Logger): Promise<FunasrAsr> {
    let ca: Buffer | undefined;
    if (opts.ca) {
      try {
        ca = await readFile(opts.ca);
      } catch (err) {
        throw new VoiceError(ErrorCode.ConfigInvalid, `asr.ca: cannot read ${opts.ca} (${(err as Error).message})`, {
          cause: err,
        });
      }
    }
    return new FunasrAsr(opts, log, ca);
  }

  /** The same, made at once (an agent's own recogniser): the `ca` file is read synchronously. */
  static createNow(opts: FunasrAsrOptions, log: Logger): FunasrAsr {
    let ca: Buffer | undefined;
    if (opts.ca) {
      try {
        ca = readFileSync(opts.ca);
      } catch (err) {
        throw new VoiceError(ErrorCode.ConfigInvalid, `asr.ca: cannot read ${opts.ca} (${(err as Error).message})`, {
          cause: err,
        });
      }
    }
    return new FunasrAsr(opts, log, ca);
  }

  openStream(opts: AsrStreamOptions): AsrStream {
    // A scope of its own under the caller's signal, so that `close` can end the stream too.
    const scope = linkedScope(opts.signal);
    this.#live.add(scope);
    return new FunasrStream(
      { ...opts, signal: scope.signal },
      {
        opts: this.#opts,
        ca: this.#ca,
        peer: this.#peer,
        onEnded: () => {
          scope.dispose();
          this.#live.delete(scope);
        },
      },
    );
  }

  transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    return transcribeAsOneStream(this, pcm, opts, this.#log);
  }

  /** Ends every stream still open (their `finish` rejects as aborted). */
  async close(): Promise<void> {
    for (const scope of [...this.#live]) scope.abort(new VoiceError(ErrorCode.Aborted, 'funasr provider closed'));
  }
}
